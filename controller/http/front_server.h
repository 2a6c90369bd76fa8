// FrontServer: the HTTP/1.1 server on the activator's proxy port, in place
// of cpp-httplib's. Measured (docs/benchmarks.md, "The floor"): a bare
// relay with a thread per connection adds TTFB p99 +0.4-0.5 ms on the
// warm path, as a one-thread epoll relay does, while the activator on
// cpp-httplib's server added +2.2 ms and ~130 us more CPU per request --
// half of it cpp-httplib's request reading and response writing: a poll
// before every write and every buffer read, the response head and each
// chunk formatted through streams and copied, a busy keep-alive wait (a
// poll of 10 ms and a sleep of 1 ms, in turn, on every idle connection).
// So the threading stays (a connection has a thread of its own while it
// lives, from the same GrowingPool), and the work per request is cut:
//
//   - reading: one recv into the connection's buffer at a time, waiting
//     in poll(2) only when nothing is buffered; the head and the body
//     (Content-Length, or chunked) taken from it; pipelined requests kept;
//   - writing: a blocking socket with a send timeout, one send for the
//     head (and a whole body), one sendmsg per streamed chunk with its
//     framing (no copy of the chunk);
//   - keep-alive: one poll on the socket and the server's stop event for
//     the idle time, so a stopping server closes idle connections at once.
//
// The handler is the Proxy's, with cpp-httplib's Request and Response
// types: the request carries its method, target, path, headers, body and
// the addresses cpp-httplib would give it (ClientWatch matches sockets by
// them); a response is a status, headers and a body, or a chunked content
// provider the server drives, writing each chunk as it is given.
//
// Limits: a head over `max_header_bytes` is answered 431, a body over
// `max_body_bytes` 413 (by `too_large`, without reading it), a malformed
// request 400, a transfer coding other than chunked 501; each closes the
// connection. One request at a time per connection (pipelined requests
// wait their turn); HTTP/1.0 and `Connection: close` end it after the
// response; `keep_alive_max_requests` does too.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/http/http_server.h"
#include "httplib.h"

namespace pilotlight::http {

struct FrontServerOptions {
  int backlog = 4096;
  // Connection threads made at start, and at most (GrowingPool).
  int min_threads = 8;
  int max_threads = 4096;
  // Idle time allowed between requests on a connection.
  absl::Duration keep_alive = absl::Seconds(5);
  int keep_alive_max_requests = 1000;
  // Each wait for a request's bytes, and each send (cpp-httplib's 5 s).
  absl::Duration read_timeout = absl::Seconds(5);
  absl::Duration write_timeout = absl::Seconds(5);
  size_t max_header_bytes = size_t{64} << 10;
  size_t max_body_bytes = size_t{16} << 20;
  GrowingPool::Warn warn = nullptr;
};

class FrontServer {
 public:
  // `client_socket` is the connection's, open while the handler runs.
  using Handler = std::function<void(
      const httplib::Request& req, httplib::Response& res, int client_socket)>;
  // Answers a request whose body (`bytes`, declared) is over the limit;
  // its body is not read. Unset: a plain 413.
  using TooLarge = std::function<void(const httplib::Request& req,
                                      uint64_t bytes, httplib::Response& res)>;

  FrontServer(FrontServerOptions options, Handler handler,
              TooLarge too_large = nullptr);
  ~FrontServer();  // Stop(), and waits for Serve to return
  FrontServer(const FrontServer&) = delete;
  FrontServer& operator=(const FrontServer&) = delete;

  // Listens on `host:port` (port 0: any free one); returns the port.
  absl::StatusOr<int> Bind(const std::string& host, int port);
  // Accepts and serves connections until Stop; returns once every
  // connection has ended.
  void Serve();
  // Stops accepting; idle connections close at once, a response being
  // streamed ends at its next chunk. Any thread, any number of times.
  void Stop();
  // Keeps serving, but each connection ends after the response it is on
  // (`Connection: close`) and idle ones close at once: clients on
  // kept-alive connections reconnect, through the Service, to an activator
  // that is not draining, while this one still answers what it has.
  void Drain();
  bool running() const { return running_; }

  // Reason phrases for the status codes the activator answers with.
  static const char* Reason(int status);

 private:
  struct Connection;
  // How a request's body comes: chunked, or `length` bytes.
  struct BodyFraming {
    bool chunked = false;
    uint64_t length = 0;
  };
  // Reads and answers requests on `fd` until it ends, then closes it.
  void ServeConnection(int fd);
  // Reads more into the connection's buffer, waiting up to `timeout`; false
  // at the end of the stream, on an error, a timeout or a stop (or a
  // drain, when `idle`).
  bool Fill(Connection& c, absl::Duration timeout, bool idle = false) const;
  // Each step of a request; false when the connection is to end (the
  // client went away or stopped sending, or it was answered 400, 413, 431
  // or 501 and closed): the head up to its empty line, the request line
  // and headers, the body.
  bool ReadHead(Connection& c, std::string& head) const;
  bool ParseHead(const Connection& c, absl::string_view head,
                 httplib::Request& req, BodyFraming& body) const;
  bool ReadBody(Connection& c, httplib::Request& req,
                const BodyFraming& body) const;
  void RefuseTooLarge(const Connection& c, const httplib::Request& req,
                      uint64_t bytes) const;
  // Writes `res` (its head, then its body or its provider's chunks); false
  // when the connection ends after it.
  bool Respond(const Connection& c, const httplib::Request& req,
               httplib::Response& res, bool keep) const;
  // Writes what `res`'s content provider gives, each chunk as it comes
  // (`framed`: in the chunked coding); false when it broke off.
  bool Provide(const Connection& c, httplib::Response& res, bool framed) const;
  // Waits until `fd` is readable or the server stops (or, `idle` between
  // requests, drains); false when it stopped, drained, timed out or failed.
  bool WaitReadable(int fd, absl::Duration timeout, bool idle) const;

  const FrontServerOptions options_;
  const Handler handler_;
  const TooLarge too_large_;
  std::atomic<int> listen_fd_{-1};
  int stop_fd_ = -1;   // an eventfd, readable once stopping
  int drain_fd_ = -1;  // an eventfd, readable once draining
  std::atomic<bool> stopping_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> running_{false};
  std::atomic<bool> serving_{false};
  std::unique_ptr<GrowingPool> pool_;
};

}  // namespace pilotlight::http
