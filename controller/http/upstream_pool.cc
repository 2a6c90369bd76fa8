#include "controller/http/upstream_pool.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/time/clock.h"

namespace pilotlight::http {
namespace {

// Whether an idle connection can carry a request: nothing to read and not
// closed. Anything readable on an idle HTTP connection is its end (EOF, a
// reset) or bytes no request asked for (a 408 before closing).
bool StillOpen(int fd) {
  char c = 0;
  for (;;) {
    const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

}  // namespace

UpstreamPool::UpstreamPool(UpstreamPoolOptions options) : options_(options) {
  if (enabled()) {
    sweeper_ = std::thread([this] { Sweep(); });
  }
}

UpstreamPool::~UpstreamPool() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (sweeper_.joinable()) {
    sweeper_.join();
  }
  for (const auto& [address, conns] : idle_) {
    for (const Idle& c : conns) {
      ::close(c.fd);
    }
  }
}

int UpstreamPool::Take(const std::string& address) {
  if (!enabled()) {
    return -1;
  }
  std::vector<int> dead;
  int fd = -1;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    const auto it = idle_.find(address);
    if (it == idle_.end()) {
      return -1;
    }
    const absl::Time fresh = absl::Now() - options_.idle;
    while (!it->second.empty()) {
      const Idle c = it->second.back();
      it->second.pop_back();
      --count_;
      if (c.since > fresh && StillOpen(c.fd)) {
        fd = c.fd;
        break;
      }
      dead.push_back(c.fd);
    }
    if (it->second.empty()) {
      idle_.erase(it);
    }
  }
  for (const int d : dead) {
    ::close(d);
  }
  return fd;
}

void UpstreamPool::Give(const std::string& address, int fd) {
  if (enabled()) {
    const std::lock_guard<std::mutex> lock(mu_);
    std::vector<Idle>& conns = idle_[address];
    if (!stopping_ && conns.size() < options_.max_idle_per_pod) {
      conns.push_back({fd, absl::Now()});
      ++count_;
      return;
    }
  }
  ::close(fd);
}

void UpstreamPool::Forget(const std::string& address) {
  std::vector<Idle> conns;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    const auto it = idle_.find(address);
    if (it == idle_.end()) {
      return;
    }
    conns.swap(it->second);
    count_ -= conns.size();
    idle_.erase(it);
  }
  for (const Idle& c : conns) {
    ::close(c.fd);
  }
}

size_t UpstreamPool::idle() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

// Every idle/4 closes what has been idle longer than `idle`: the oldest
// sit at the front of each pod's list.
void UpstreamPool::Sweep() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, absl::ToChronoMilliseconds(std::max(
                             options_.idle / 4, absl::Milliseconds(10))));
    const absl::Time fresh = absl::Now() - options_.idle;
    std::vector<int> expired;
    for (auto it = idle_.begin(); it != idle_.end();) {
      std::vector<Idle>& conns = it->second;
      const auto keep =
          std::find_if(conns.begin(), conns.end(),
                       [fresh](const Idle& c) { return c.since > fresh; });
      for (auto c = conns.begin(); c != keep; ++c) {
        expired.push_back(c->fd);
      }
      conns.erase(conns.begin(), keep);
      it = conns.empty() ? idle_.erase(it) : std::next(it);
    }
    count_ -= expired.size();
    if (!expired.empty()) {
      lock.unlock();
      for (const int fd : expired) {
        ::close(fd);
      }
      lock.lock();
    }
  }
}

}  // namespace pilotlight::http
