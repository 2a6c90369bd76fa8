#include "tests/bench/tcp_relay.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "tests/loopback.h"

namespace pilotlight::bench {
namespace {

// One side of a relayed pair: `out` holds bytes read from the peer that
// this side's socket would not take yet.
struct Side {
  int peer = -1;
  std::string out;
  bool open = false;
};

void NoDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

class Relay {
 public:
  Relay(int epoll_fd, int target_port) : ep_(epoll_fd), target_(target_port) {}

  void Accept(int listen_fd) {
    for (;;) {
      const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK);
      if (c < 0) {
        return;  // EAGAIN: all taken
      }
      // Blocking connect (loopback: microseconds), then non-blocking.
      const int u = testutil::ConnectLoopback(target_);
      if (u < 0) {
        ::close(c);
        continue;
      }
      ::fcntl(u, F_SETFL, O_NONBLOCK);
      NoDelay(c);
      NoDelay(u);
      Open(c, u);
      Open(u, c);
    }
  }

  // `fd` is readable, writable or broken.
  void Serve(int fd, uint32_t events) {
    if (fd >= static_cast<int>(sides_.size()) || !At(fd).open) {
      return;
    }
    if ((events & EPOLLOUT) != 0 && !Flush(fd)) {
      return;
    }
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
      Pump(fd);
    }
  }

 private:
  void Open(int fd, int peer) {
    if (fd >= static_cast<int>(sides_.size())) {
      sides_.resize(static_cast<size_t>(fd) + 1);
    }
    At(fd) = Side{.peer = peer, .out = {}, .open = true};
    Watch(EPOLL_CTL_ADD, fd, EPOLLIN);
  }

  void Watch(int op, int fd, uint32_t events) {
    epoll_event e{};
    e.events = events;
    e.data.fd = fd;
    ::epoll_ctl(ep_, op, fd, &e);
  }

  void Close(int fd) {
    const int peer = At(fd).peer;
    for (const int f : {fd, peer}) {
      if (At(f).open) {
        At(f) = Side{};
        ::close(f);  // also leaves the epoll set
      }
    }
  }

  // Writes what waits for `fd`; once all is written, its peer is read
  // again. False when the pair was closed.
  bool Flush(int fd) {
    Side& s = At(fd);
    while (!s.out.empty()) {
      const ssize_t n = ::send(fd, s.out.data(), s.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        s.out.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return true;  // EPOLLOUT stays on
      } else {
        Close(fd);
        return false;
      }
    }
    Watch(EPOLL_CTL_MOD, fd, EPOLLIN);
    if (At(s.peer).open) {
      Watch(EPOLL_CTL_MOD, s.peer, EPOLLIN);
    }
    return true;
  }

  // Reads `fd` and writes to its peer what it can; the rest waits in the
  // peer's buffer, and `fd` is not read until it is written.
  void Pump(int fd) {
    const int peer = At(fd).peer;
    if (!At(peer).out.empty()) {
      return;  // an event of the same wait, from before reading stopped
    }
    std::array<char, 65536> buf;
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      Close(fd);
      return;
    }
    if (n < 0) {
      return;
    }
    size_t sent = 0;
    while (sent < static_cast<size_t>(n)) {
      const ssize_t w = ::send(peer, buf.data() + sent,
                               static_cast<size_t>(n) - sent, MSG_NOSIGNAL);
      if (w > 0) {
        sent += static_cast<size_t>(w);
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else if (w < 0 && errno == EAGAIN) {
        At(peer).out.assign(buf.data() + sent, static_cast<size_t>(n) - sent);
        Watch(EPOLL_CTL_MOD, peer, EPOLLIN | EPOLLOUT);
        Watch(EPOLL_CTL_MOD, fd, 0);  // not read until the peer drains
        return;
      } else {
        Close(fd);
        return;
      }
    }
  }

  Side& At(int fd) { return sides_[static_cast<size_t>(fd)]; }

  const int ep_;
  const int target_;
  std::vector<Side> sides_;  // by file descriptor
};

// A thread per connection, as the activator has: it waits on both sockets
// with poll(2) and copies what comes with blocking writes.
void RelayOnThread(int c, int target_port) {
  const int u = testutil::ConnectLoopback(target_port);
  if (u >= 0) {
    NoDelay(c);
    NoDelay(u);
    std::array<pollfd, 2> p{pollfd{c, POLLIN, 0}, pollfd{u, POLLIN, 0}};
    std::array<char, 65536> buf;
    bool open = true;
    while (open && ::poll(p.data(), p.size(), -1) > 0) {
      for (size_t i = 0; i < 2 && open; ++i) {
        if (p[i].revents == 0) {
          continue;
        }
        const ssize_t n = ::recv(p[i].fd, buf.data(), buf.size(), 0);
        open = n > 0 && ::send(p[1 - i].fd, buf.data(), static_cast<size_t>(n),
                               MSG_NOSIGNAL) == n;
      }
    }
  }
  if (u >= 0) {
    ::close(u);
  }
  ::close(c);
}

}  // namespace

bool RunTcpRelay(int target_port, const std::function<void(int port)>& ready,
                 bool thread_per_connection) {
  int port = 0;
  const int l = testutil::ListenLoopback(port, 4096);
  if (l < 0) {
    return false;
  }
  if (thread_per_connection) {
    ready(port);
    for (;;) {
      const int c = ::accept(l, nullptr, nullptr);
      if (c >= 0) {
        std::thread([c, target_port] {
          RelayOnThread(c, target_port);
        }).detach();
      }
    }
  }
  ::fcntl(l, F_SETFL, O_NONBLOCK);  // Accept takes all there are
  const int ep = ::epoll_create1(0);
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = l;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, l, &e);
  ready(port);
  Relay relay(ep, target_port);
  std::array<epoll_event, 256> events;
  for (;;) {
    const int n = ::epoll_wait(ep, events.data(), events.size(), -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == l) {
        relay.Accept(l);
      } else {
        relay.Serve(fd, events[static_cast<size_t>(i)].events);
      }
    }
  }
}

}  // namespace pilotlight::bench
