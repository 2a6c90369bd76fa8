#include "controller/activator/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pilotlight::activator {
namespace {

// A thread per connection, made when no idle one is left, up to `max`;
// beyond that connections wait in order. Threads stay once made.
class GrowingPool final : public httplib::TaskQueue {
 public:
  explicit GrowingPool(int max) : max_(static_cast<size_t>(max)) {}
  ~GrowingPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    const std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > idle_ && threads_.size() < max_) {
      threads_.emplace_back([this] { Work(); });
    }
    ready_.notify_one();
  }

  void shutdown() override {
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

 private:
  void Work() {
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

  const size_t max_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

}  // namespace

std::shared_ptr<ListenSocket> ConfigureHttpServer(
    httplib::Server& server, const HttpServerOptions& options) {
  const int max_threads = options.max_threads;
  server.new_task_queue = [max_threads] {
    return new GrowingPool(max_threads);
  };
  auto socket = std::make_shared<ListenSocket>();
  server.set_socket_options([socket](int fd) {
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    socket->fd = fd;
  });
  server.set_keep_alive_timeout(options.keep_alive_seconds);
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

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(
    const std::string& address, const std::string& flag) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", address, ": want host:port"));
  }
  return std::make_pair(address.substr(0, colon), port);
}

}  // namespace pilotlight::activator
