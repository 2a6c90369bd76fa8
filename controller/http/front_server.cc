#include "controller/http/front_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "controller/http/chunked.h"
#include "controller/http/message_head.h"
#include "controller/http/poll_millis.h"
#include "controller/http/socket_name.h"

namespace pilotlight::http {
namespace {

constexpr size_t kReadBytes = size_t{16} << 10;

timeval Timeval(absl::Duration d) {
  return absl::ToTimeval(std::max(d, absl::Milliseconds(1)));
}

// The numeric host and the port of `a`, as cpp-httplib writes them.
void Describe(const sockaddr_storage& a, socklen_t len, std::string& host,
              int& port) {
  if (SocketHost(a, len, host)) {
    port = SocketPort(a);
  }
}

// Sends all of `iov`; false when the peer is gone or the send timed out.
bool SendAll(int fd, iovec* iov, size_t n) {
  while (n > 0) {
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = n;
    const ssize_t sent = ::sendmsg(fd, &m, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;  // EAGAIN: the send timeout
    }
    auto left = static_cast<size_t>(sent);
    while (n > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

bool SendAll(int fd, absl::string_view s) {
  iovec v{const_cast<char*>(s.data()), s.size()};
  return SendAll(fd, &v, 1);
}

// A final answer on a connection that then ends.
bool SendClosing(int fd, int status, absl::string_view type,
                 absl::string_view body) {
  return SendAll(
      fd, absl::StrCat("HTTP/1.1 ", status, " ", FrontServer::Reason(status),
                       "\r\nContent-Type: ", type, "\r\nContent-Length: ",
                       body.size(), "\r\nConnection: close\r\n\r\n", body));
}

}  // namespace

// One client connection: its socket, the bytes read and not yet used, and
// the addresses every request on it carries.
struct FrontServer::Connection {
  int fd = -1;
  std::string in;
  size_t at = 0;  // in[at..] is unread
  httplib::Request base;
  int served = 0;  // requests answered before the one being read

  absl::string_view unread() const { return absl::string_view(in).substr(at); }
  void Consume(size_t n) {
    at += n;
    if (at == in.size()) {
      in.clear();
      at = 0;
    }
  }
  // Answers `status` with `message` as plain text; the connection then
  // ends.
  void Refuse(int status, absl::string_view message) const {
    SendClosing(fd, status, "text/plain", absl::StrCat(message, "\n"));
  }
};

const char* FrontServer::Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Status";
  }
}

FrontServer::FrontServer(FrontServerOptions options, Handler handler,
                         TooLarge too_large)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      too_large_(std::move(too_large)),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      drain_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

FrontServer::~FrontServer() {
  Stop();
  while (serving_) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  if (const int fd = listen_fd_.exchange(-1); fd >= 0) {
    ::close(fd);
  }
  for (const int fd : {stop_fd_, drain_fd_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

absl::StatusOr<int> FrontServer::Bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc =
          ::getaddrinfo(host.empty() ? nullptr : host.c_str(),
                        std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":",
                                               port, ": ", ::gai_strerror(rc)));
  }
  std::string why;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    // Not SO_REUSEPORT: a second process must not silently share the port.
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        ::listen(fd, options_.backlog) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", host, ":", port, ": ", why));
  }
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::string bound_host;
  int bound = port;
  Describe(a, len, bound_host, bound);
  listen_fd_ = fd;
  return bound;
}

void FrontServer::Serve() {
  const int l = listen_fd_.load();
  if (l < 0 || stopping_) {
    return;
  }
  serving_ = true;
  pool_ = std::make_unique<GrowingPool>(
      options_.min_threads, options_.max_threads, nullptr, options_.warn);
  running_ = true;
  while (!stopping_) {
    const int c = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (stopping_) {
        break;
      }
      if (errno != EINTR && errno != ECONNABORTED) {
        absl::SleepFor(absl::Milliseconds(10));  // e.g. out of descriptors
      }
      continue;
    }
    pool_->enqueue([this, c] { ServeConnection(c); });
  }
  running_ = false;
  pool_->shutdown();  // every connection ended
  serving_ = false;
}

void FrontServer::Stop() {
  if (stopping_.exchange(true)) {
    return;
  }
  const uint64_t one = 1;
  (void)::write(stop_fd_, &one, sizeof one);
  if (const int l = listen_fd_.load(); l >= 0) {
    ::shutdown(l, SHUT_RDWR);  // wakes accept
  }
}

void FrontServer::Drain() {
  if (draining_.exchange(true)) {
    return;
  }
  const uint64_t one = 1;
  (void)::write(drain_fd_, &one, sizeof one);
}

bool FrontServer::WaitReadable(int fd, absl::Duration timeout,
                               bool idle) const {
  // A negative descriptor is not polled.
  std::array<pollfd, 3> p{pollfd{fd, POLLIN, 0}, pollfd{stop_fd_, POLLIN, 0},
                          pollfd{idle ? drain_fd_ : -1, POLLIN, 0}};
  const absl::Time until = absl::Now() + timeout;
  for (;;) {
    const int n = ::poll(p.data(), p.size(), PollMillis(until - absl::Now()));
    if (n > 0) {
      return p[1].revents == 0 && p[2].revents == 0 && p[0].revents != 0;
    }
    if (n == 0 || errno != EINTR) {
      return false;
    }
  }
}

void FrontServer::ServeConnection(int fd) {
  Connection c;
  c.fd = fd;
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const timeval send_timeout = Timeval(options_.write_timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      Describe(a, len, c.base.remote_addr, c.base.remote_port);
    }
    len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      Describe(a, len, c.base.local_addr, c.base.local_port);
    }
  }
  for (; c.served < options_.keep_alive_max_requests && !stopping_;
       ++c.served) {
    std::string head;
    httplib::Request req = c.base;
    BodyFraming body;
    if (!ReadHead(c, head) || !ParseHead(c, head, req, body) ||
        !ReadBody(c, req, body)) {
      break;
    }
    const std::string connection =
        absl::AsciiStrToLower(req.get_header_value("Connection"));
    const bool keep = (req.version == "HTTP/1.1"
                           ? !absl::StrContains(connection, "close")
                           : absl::StrContains(connection, "keep-alive")) &&
                      c.served + 1 < options_.keep_alive_max_requests;
    // The read buffer is not kept while the handler runs (a held request
    // may wait minutes) when nothing more has come.
    if (c.unread().empty()) {
      std::string().swap(c.in);
      c.at = 0;
    }
    httplib::Response res;
    handler_(req, res, fd);
    if (res.status < 0) {
      res.status = 404;
    }
    if (!Respond(c, req, res, keep)) {
      break;
    }
  }
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

bool FrontServer::Fill(Connection& c, absl::Duration timeout, bool idle) const {
  if (c.at > 0 && c.at * 2 > c.in.size()) {
    c.in.erase(0, c.at);
    c.at = 0;
  }
  for (;;) {
    // Into the buffer itself: a stack array would push the calls below it
    // 16 KiB deeper, and every connection thread's stack with them.
    const size_t had = c.in.size();
    c.in.resize(had + kReadBytes);
    const ssize_t n = ::recv(c.fd, c.in.data() + had, kReadBytes, MSG_DONTWAIT);
    c.in.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n > 0) {
      return true;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      return false;
    }
    if (errno == EAGAIN && !WaitReadable(c.fd, timeout, idle)) {
      return false;
    }
  }
}

bool FrontServer::ReadHead(Connection& c, std::string& head) const {
  // Up to the empty line (leading empty lines ignored).
  for (bool first_wait = true;; first_wait = false) {
    while (absl::StartsWith(c.unread(), "\r\n")) {
      c.Consume(2);
    }
    const size_t end = c.unread().find("\r\n\r\n");
    if (end != absl::string_view::npos && end <= options_.max_header_bytes) {
      head = std::string(c.unread().substr(0, end));
      c.Consume(end + 4);
      return true;
    }
    if (end != absl::string_view::npos ||
        c.unread().size() > options_.max_header_bytes) {
      c.Refuse(431, absl::StrCat("request head over ",
                                 options_.max_header_bytes, " bytes"));
      return false;
    }
    // Between requests the keep-alive idle time, within one the read
    // timeout.
    const bool idle = first_wait && c.unread().empty() && c.served > 0;
    if (!Fill(c, idle ? options_.keep_alive : options_.read_timeout, idle)) {
      return false;
    }
  }
}

bool FrontServer::ParseHead(const Connection& c, absl::string_view head,
                            httplib::Request& req, BodyFraming& body) const {
  Framing framing = Framing::kNone;
  uint64_t length = 0;
  if (const std::optional<Refusal> refused =
          ParseRequestHead(head, req, framing, length)) {
    c.Refuse(refused->status, refused->message);
    return false;
  }
  body.chunked = framing == Framing::kChunked;
  body.length = length;
  return true;
}

void FrontServer::RefuseTooLarge(const Connection& c,
                                 const httplib::Request& req,
                                 uint64_t bytes) const {
  httplib::Response res;
  if (too_large_) {
    too_large_(req, bytes, res);
  }
  const std::string type = res.get_header_value("Content-Type");
  SendClosing(c.fd, 413, type.empty() ? "text/plain" : type,
              res.body.empty() ? "request body too large\n" : res.body);
}

bool FrontServer::ReadBody(Connection& c, httplib::Request& req,
                           const BodyFraming& body) const {
  // A body over the limit is not read: answered, and the connection ends.
  if (body.length > options_.max_body_bytes) {
    RefuseTooLarge(c, req, body.length);
    return false;
  }
  if ((body.chunked || body.length > 0) &&
      absl::EqualsIgnoreCase(req.get_header_value("Expect"), "100-continue") &&
      !SendAll(c.fd, "HTTP/1.1 100 Continue\r\n\r\n")) {
    return false;
  }
  if (!body.chunked) {
    while (c.unread().size() < body.length) {
      if (!Fill(c, options_.read_timeout)) {
        return false;  // the client went away, or stopped sending
      }
    }
    req.body = std::string(c.unread().substr(0, body.length));
    c.Consume(body.length);
    return true;
  }
  ChunkedDecoder decoder;
  while (!decoder.done()) {
    size_t used = 0;
    if (!decoder.Decode(c.unread(), used, req.body)) {
      c.Refuse(400, absl::StrCat("malformed chunked request body: ",
                                 decoder.error()));
      return false;
    }
    c.Consume(used);
    // Over the limit by what a chunk declares: refused before its data is
    // read.
    if (const uint64_t declared = req.body.size() + decoder.chunk_left();
        declared > options_.max_body_bytes) {
      RefuseTooLarge(c, req, declared);
      return false;
    }
    if (!decoder.done() && !Fill(c, options_.read_timeout)) {
      return false;
    }
  }
  return true;
}

bool FrontServer::Respond(const Connection& c, const httplib::Request& req,
                          httplib::Response& res, bool keep) const {
  // The head, then the body or the provider's chunks.
  // Draining (maybe since the request came): this answer is the last.
  keep = keep && !draining_;
  const bool head_only = req.method == "HEAD" || res.status == 204 ||
                         res.status == 304 || res.status < 200;
  const bool provided = static_cast<bool>(res.content_provider_);
  const bool streamed = provided && res.is_chunked_content_provider_;
  // HTTP/1.0 has no chunked coding: there a stream ends with the
  // connection.
  const bool framed = streamed && req.version == "HTTP/1.1";
  keep = keep && (framed || !streamed);
  std::string out =
      absl::StrCat("HTTP/1.1 ", res.status, " ", Reason(res.status), "\r\n");
  for (const auto& [name, value] : res.headers) {
    if (!absl::EqualsIgnoreCase(name, "Content-Length") &&
        !absl::EqualsIgnoreCase(name, "Transfer-Encoding") &&
        !absl::EqualsIgnoreCase(name, "Connection")) {
      absl::StrAppend(&out, name, ": ", value, "\r\n");
    }
  }
  if (framed) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (!streamed && res.status >= 200 && res.status != 204 &&
             res.status != 304) {
    absl::StrAppend(&out, "Content-Length: ",
                    provided ? res.content_length_ : res.body.size(), "\r\n");
  }
  if (!keep) {
    out += "Connection: close\r\n";
  } else if (req.version == "HTTP/1.0") {
    out += "Connection: keep-alive\r\n";  // asked for, and granted
  }
  out += "\r\n";
  if (!head_only && !provided) {
    out += res.body;
  }
  const bool ok =
      SendAll(c.fd, out) && (head_only || !provided || Provide(c, res, framed));
  return ok && keep;
}

bool FrontServer::Provide(const Connection& c, httplib::Response& res,
                          bool framed) const {
  const bool streamed = res.is_chunked_content_provider_;
  bool ok = true;
  bool done = false;
  size_t offset = 0;
  httplib::DataSink sink;
  sink.write = [&](const char* d, size_t n) {
    if (!ok || n == 0) {
      return ok;
    }
    std::array<char, 24> size{};
    const int k = std::snprintf(size.data(), size.size(), "%zx\r\n", n);
    std::array<iovec, 3> v{iovec{size.data(), static_cast<size_t>(k)},
                           iovec{const_cast<char*>(d), n},
                           iovec{const_cast<char*>("\r\n"), 2}};
    ok = framed ? SendAll(c.fd, v.data(), v.size()) : SendAll(c.fd, &v[1], 1);
    offset += n;
    return ok;
  };
  sink.done = [&] {
    if (!done) {
      done = true;
      ok = ok && (!framed || SendAll(c.fd, "0\r\n\r\n"));
    }
  };
  sink.is_writable = [&] {
    pollfd p{c.fd, POLLOUT, 0};
    return ok && ::poll(&p, 1, 0) >= 0 &&
           (p.revents & (POLLERR | POLLHUP)) == 0;
  };
  while (ok && !done) {
    const size_t left = streamed ? 0 : res.content_length_ - offset;
    if (stopping_ || !res.content_provider_(offset, left, sink)) {
      ok = false;
    } else if (!streamed && offset >= res.content_length_) {
      done = true;
    }
  }
  res.content_provider_success_ = ok && done;
  return ok && done;
}

}  // namespace pilotlight::http
