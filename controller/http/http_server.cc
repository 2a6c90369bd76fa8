#include "controller/http/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cstdio>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace pilotlight::http {
GrowingPool::GrowingPool(int min, int max, Spawn spawn, Warn warn)
    : max_(static_cast<size_t>(max)),
      spawn_(spawn != nullptr
                 ? std::move(spawn)
                 : [](std::function<void()>
                          fn) { return std::thread(std::move(fn)); }),
      warn_(warn != nullptr ? std::move(warn) : [](const std::string& m) {
        std::fprintf(stderr, "%s\n", m.c_str());
      }) {
  const std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < min && threads_.size() < max_; ++i) {
    GrowLocked();
  }
}

void GrowingPool::GrowLocked() {
  try {
    threads_.push_back(spawn_([this] { Work(); }));
  } catch (const std::system_error& e) {
    // Out of threads for this process: serve with those there are.
    max_ = threads_.size();
    warn_(absl::StrCat("cannot start connection thread ", max_ + 1, " (",
                       e.what(), "): connections now wait for one of ", max_,
                       " threads; raise the process's thread (pids) limit or "
                       "lower --max-connections and the hold bounds"));
  }
}

GrowingPool::~GrowingPool() { shutdown(); }

void GrowingPool::enqueue(std::function<void()> fn) {
  const std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back(std::move(fn));
  if (jobs_.size() > idle_ && threads_.size() < max_) {
    GrowLocked();
  }
  ready_.notify_one();
}

void GrowingPool::shutdown() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
}

void GrowingPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    ready_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) {
      return;  // stopping
    }
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

std::shared_ptr<ListenSocket> ConfigureHttpServer(
    httplib::Server& server, const HttpServerOptions& options) {
  const int min_threads = options.min_threads;
  const int max_threads = options.max_threads;
  server.new_task_queue = [min_threads, max_threads, warn = options.warn] {
    return new GrowingPool(min_threads, max_threads, nullptr, warn);
  };
  auto socket = std::make_shared<ListenSocket>();
  server.set_socket_options([socket](int fd) {
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    socket->fd = fd;
  });
  server.set_keep_alive_timeout(options.keep_alive_seconds);
  server.set_keep_alive_max_count(
      static_cast<size_t>(options.keep_alive_max_requests));
  // Streamed tokens go out as written, not held by Nagle's algorithm for
  // the peer's delayed ACK (40 ms a chunk).
  server.set_tcp_nodelay(true);
  return socket;
}

absl::StatusOr<int> BindHttpServer(httplib::Server& server,
                                   const ListenSocket& socket,
                                   const std::string& host, int port,
                                   int backlog) {
  const int bound = port == 0 ? server.bind_to_any_port(host)
                              : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", host, ":", port));
  }
  const int fd = socket.fd.load();
  // Linux lets listen(2) on a listening socket change its backlog.
  if (fd < 0 || ::listen(fd, backlog) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot raise the listen backlog of ", host, ":", bound,
                     " (was the server configured with ConfigureHttpServer?)"));
  }
  return bound;
}

}  // namespace pilotlight::http
