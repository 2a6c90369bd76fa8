#include "controller/http/forward.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "controller/base/host_port.h"
#include "controller/http/poll_millis.h"

namespace pilotlight::http {
namespace {

bool NotForwarded(const std::string& name) {
  static constexpr std::array<const char*, 14> kDropped = {
      // Hop-by-hop, or set here.
      "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
      "trailer", "upgrade", "host", "content-length",
      // The server answered 100 Continue already; the body comes whole.
      "expect",
      // cpp-httplib's server puts these among the headers.
      "remote_addr", "remote_port", "local_addr", "local_port"};
  const std::string lower = absl::AsciiStrToLower(name);
  return std::any_of(kDropped.begin(), kDropped.end(),
                     [&](const char* h) { return lower == h; });
}

std::string Errno(absl::string_view what, int err) {
  return absl::StrCat(what, ": ", std::strerror(err));
}

}  // namespace

Forward::Forward(const httplib::Request& req, const std::string& target,
                 const std::string& address, const ForwardTimeouts& timeouts,
                 UpstreamPool* pool)
    : timeouts_(timeouts),
      address_(address),
      started_(absl::Now()),
      head_(req.method == "HEAD"),
      pool_(pool != nullptr && pool->enabled() ? pool : nullptr) {
  request_.reserve(512 + req.body.size());
  absl::StrAppend(&request_, req.method, " ", target,
                  " HTTP/1.1\r\nHost: ", address, "\r\n");
  for (const auto& [name, value] : req.headers) {
    if (!NotForwarded(name)) {
      absl::StrAppend(&request_, name, ": ", value, "\r\n");
    }
  }
  absl::StrAppend(&request_, "X-Forwarded-For: ", req.remote_addr, "\r\n");
  if (!req.body.empty() || (req.method != "GET" && !head_)) {
    absl::StrAppend(&request_, "Content-Length: ", req.body.size(), "\r\n");
  }
  // HTTP/1.1 keeps the connection without asking.
  absl::StrAppend(&request_, pool_ == nullptr ? "Connection: close\r\n" : "",
                  "\r\n", req.body);
}

Forward::~Forward() { Close(); }

void Forward::Close() {
  int fd = -1;
  {
    const std::lock_guard<std::mutex> lock(fd_mu_);
    fd = fd_.exchange(-1);
  }
  if (fd >= 0) {
    ::close(fd);
  }
}

void Forward::Release() {
  if (pool_ == nullptr || !keep_alive_ || !buf_.empty() ||
      framing_ == Framing::kUntilClose) {
    Close();
    return;
  }
  int fd = -1;
  {
    const std::lock_guard<std::mutex> lock(fd_mu_);
    if (cancelled_) {
      return;  // shut down already: the destructor closes it
    }
    fd = fd_.exchange(-1);
  }
  if (fd >= 0) {
    pool_->Give(address_, fd);
  }
}

void Forward::Adopt(int fd) {
  const std::lock_guard<std::mutex> lock(fd_mu_);
  fd_ = fd;
  if (cancelled_) {
    ::shutdown(fd, SHUT_RDWR);  // cancelled before it had a connection
  }
}

void Forward::Cancel() {
  const std::lock_guard<std::mutex> lock(fd_mu_);
  cancelled_ = true;
  if (const int fd = fd_.load(); fd >= 0) {
    ::shutdown(fd, SHUT_RDWR);  // wakes a wait on it in another thread
  }
}

bool Forward::Fail(std::string why) {
  if (why_.empty()) {
    why_ = std::move(why);
  }
  Cancel();
  return false;
}

Forward::Io Forward::Wait(short events, absl::Time deadline) {
  pollfd p{fd_.load(), events, 0};
  while (!cancelled_) {
    const int n = ::poll(&p, 1, PollMillis(deadline - absl::Now()));
    if (n > 0) {
      return Io::kOk;  // ready, or an error the next call reports
    }
    if (n == 0) {
      return Io::kTimedOut;
    }
    if (errno != EINTR) {
      why_ = Errno("poll", errno);
      return Io::kError;
    }
  }
  return Io::kClosed;
}

Forward::Io Forward::Read(absl::Time deadline) {
  for (;;) {
    if (cancelled_) {
      return Io::kClosed;
    }
    // The last read emptied the socket: wait before reading again (a
    // stream's next chunk is seldom there yet; a read that finds nothing
    // would be one more system call per chunk).
    if (drained_) {
      if (const Io w = Wait(POLLIN, deadline); w != Io::kOk) {
        return w;
      }
      drained_ = false;
    }
    std::array<char, kReadBytes> b;
    const ssize_t n = ::recv(fd_.load(), b.data(), b.size(), 0);
    if (n > 0) {
      buf_.append(b.data(), static_cast<size_t>(n));
      answered_ = true;
      drained_ = static_cast<size_t>(n) < b.size();
      return Io::kOk;
    }
    if (n == 0) {
      return Io::kClosed;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      drained_ = true;
      continue;
    }
    if (errno != EINTR) {
      why_ = Errno("read", errno);
      return Io::kError;
    }
  }
}

bool Forward::Connect() {
  const absl::StatusOr<std::pair<std::string, int>> pod =
      SplitHostPort(address_, "pod");
  if (!pod.ok()) {
    why_ = std::string(pod.status().message());
    return false;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc =
          ::getaddrinfo(pod->first.c_str(), std::to_string(pod->second).c_str(),
                        &hints, &found);
      rc != 0) {
    why_ = absl::StrCat("resolving ", pod->first, ": ", ::gai_strerror(rc));
    return false;
  }
  const int fd = ::socket(found->ai_family,
                          found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          found->ai_protocol);
  if (fd < 0) {
    why_ = Errno("socket", errno);
    ::freeaddrinfo(found);
    return false;
  }
  Adopt(fd);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
  const int err = errno;
  ::freeaddrinfo(found);
  if (rc == 0) {
    return true;  // connected at once
  }
  if (err != EINPROGRESS) {
    why_ = Errno("connect", err);
    return false;
  }
  switch (Wait(POLLOUT, absl::Now() + timeouts_.connect)) {
    case Io::kOk:
      break;
    case Io::kTimedOut:
      why_ = absl::StrCat("connect: no answer within ",
                          absl::FormatDuration(timeouts_.connect));
      return false;
    default:
      return false;
  }
  int so_error = 0;
  socklen_t len = sizeof(so_error);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) {
    why_ = Errno("connect", so_error);
    return false;
  }
  return true;
}

Forward::Start Forward::WaitForResponse() {
  const absl::Time deadline = started_ + timeouts_.response_start;
  if (pool_ != nullptr) {
    if (const int fd = pool_->Take(address_); fd >= 0) {
      Adopt(fd);
      reused_ = true;
      const Start start = Exchange(deadline);
      if (start != Start::kFailed || answered_ || cancelled_) {
        return start;
      }
      // Closed or reset with nothing answered: the pod ended its idle
      // connection as the request went out. Once more, on a new one.
      stale_ = true;
      why_.clear();
      Close();
    }
  }
  if (!Connect()) {
    return cancelled_ ? Start::kFailed : Start::kConnectFailed;
  }
  return Exchange(deadline);
}

Forward::Start Forward::Exchange(absl::Time deadline) {
  auto timed_out = [&] {
    why_ = absl::StrCat("no response within ",
                        absl::FormatDuration(timeouts_.response_start));
    Cancel();
    return Start::kTimedOut;
  };
  // The request, whole.
  for (size_t sent = 0; sent < request_.size();) {
    const ssize_t n = ::send(fd_.load(), request_.data() + sent,
                             request_.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const Io w = Wait(POLLOUT, deadline);
      if (w == Io::kTimedOut) {
        return timed_out();
      }
      if (w != Io::kOk) {
        return Start::kFailed;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    why_ = Errno("write", errno);
    return Start::kFailed;
  }
  // The status line and headers; interim (1xx) responses are skipped.
  for (;;) {
    const size_t end = buf_.find("\r\n\r\n");
    if (end != std::string::npos) {
      if (!ParseHead(end)) {
        Cancel();
        return Start::kFailed;
      }
      if (status_ >= 200) {
        std::string().swap(request_);
        return Start::kResponded;
      }
      continue;
    }
    if (buf_.size() > kMaxHeaderBytes) {
      why_ = absl::StrCat("response headers over ", kMaxHeaderBytes, " bytes");
      Cancel();
      return Start::kFailed;
    }
    switch (Read(deadline)) {
      case Io::kOk:
        continue;
      case Io::kTimedOut:
        return timed_out();
      case Io::kClosed:
        if (why_.empty()) {
          why_ = "connection closed before a response";
        }
        return Start::kFailed;
      case Io::kError:
        return Start::kFailed;
    }
  }
}

bool Forward::ParseHead(size_t end) {
  const std::string head = buf_.substr(0, end);
  buf_.erase(0, end + 4);
  ResponseHead r;
  if (std::optional<std::string> why = ParseResponseHead(head, head_, r)) {
    why_ = *std::move(why);
    return false;
  }
  status_ = r.status;
  if (status_ < 200) {
    return true;  // 100 Continue, 103 Early Hints: the real one follows
  }
  headers_ = std::move(r.headers);
  keep_alive_ = r.keep_alive;
  framing_ = r.framing;
  remaining_ = r.length;
  done_ = framing_ == Framing::kNone ||
          (framing_ == Framing::kLength && remaining_ == 0);
  return true;
}

bool Forward::Decode(std::string& out) {
  switch (framing_) {
    case Framing::kNone:
      keep_alive_ = keep_alive_ && buf_.empty();  // else bytes unasked for
      buf_.clear();
      return true;
    case Framing::kUntilClose:
      out.swap(buf_);
      buf_.clear();
      return true;
    case Framing::kLength: {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(remaining_, buf_.size()));
      out.assign(buf_, 0, n);
      // Bytes past the length are not the body (nor to be read as the
      // next response).
      keep_alive_ = keep_alive_ && n == buf_.size();
      buf_.clear();
      remaining_ -= n;
      done_ = remaining_ == 0;
      return true;
    }
    case Framing::kChunked:
      break;
  }
  size_t used = 0;
  if (!chunked_.Decode(buf_, used, out)) {
    why_ = chunked_.error();
    return false;
  }
  buf_.erase(0, used);
  done_ = chunked_.done();
  return true;
}

bool Forward::Pump(httplib::DataSink& sink) {
  const absl::Time total = started_ + timeouts_.total;
  for (;;) {
    std::string out;
    if (!Decode(out)) {
      return Fail(why_);
    }
    if (!out.empty() && !sink.write(out.data(), out.size())) {
      return Fail("the client went away");
    }
    if (done_) {
      Release();
      sink.done();
      return true;
    }
    if (!out.empty()) {
      return true;  // called again for more
    }
    const absl::Time now = absl::Now();
    switch (Read(std::min(now + timeouts_.idle, total))) {
      case Io::kOk:
        continue;
      case Io::kTimedOut:
        return Fail(absl::Now() >= total
                        ? absl::StrCat("response took over ",
                                       absl::FormatDuration(timeouts_.total))
                        : absl::StrCat("no bytes for ",
                                       absl::FormatDuration(timeouts_.idle)));
      case Io::kClosed:
        if (framing_ == Framing::kUntilClose && !cancelled_) {
          done_ = true;
          continue;
        }
        return Fail(cancelled_ ? "cancelled"
                               : "the pod closed the connection mid-body");
      case Io::kError:
        return Fail(why_);
    }
  }
}

}  // namespace pilotlight::http
