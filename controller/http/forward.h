// Forward: one request sent on to one pod, its answer streamed back as it
// comes, on the thread of the client's connection. The upstream side is a
// small HTTP/1.1 client over a non-blocking socket: WaitForResponse takes
// an idle connection to the pod from the UpstreamPool or connects, sends
// the request and reads the status line and headers; a chunked content
// provider then calls Pump, which reads what the pod sent next and writes
// it to the client at once -- the client's first byte goes out before the
// upstream is done. The body's framing (Content-Length, chunked, or until
// close) is decoded; its bytes are not parsed (SSE events pass as they
// are, compressed bodies stay compressed). A response read whole gives its
// connection back to the pool; without a pool each request has its own
// (`Connection: close`).
//
// A reused connection that ends before any byte of an answer (the pod
// closed it as it idled, in the instant the request went out) is retried
// once on a new connection to the same pod: the pod answered nothing, and
// only a connection the pod had kept alive is retried so.
//
// Why not cpp-httplib's client: 0.11.4's blocking client has no way to
// stop after the headers and read the body later, so the upstream request
// had to run on a second thread and hand every chunk over through a
// condition variable -- two thread switches per streamed token, and a
// thread per request in flight. Measured in activator_bench (docs/
// benchmarks.md).
//
// Backpressure: at most one read (16 KiB) waits between the two sides; a
// slow client slows the upstream read, never grows memory. Cancel (the
// client went away, a timeout) shuts the upstream connection at once; it
// may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "controller/http/chunked.h"
#include "controller/http/message_head.h"
#include "controller/http/upstream_pool.h"
#include "httplib.h"

namespace pilotlight::http {

struct ForwardTimeouts {
  absl::Duration connect = absl::Seconds(2);
  absl::Duration response_start = absl::Minutes(5);  // time to first byte
  absl::Duration idle = absl::Minutes(1);            // between chunks
  absl::Duration total = absl::Minutes(30);
};

class Forward {
 public:
  // How the upstream answered before any byte went to the client.
  enum class Start {
    kResponded,      // status and headers are in
    kConnectFailed,  // refused, reset or timed out before a response:
                     // safe to try another pod
    kFailed,         // the connection broke after the request was sent
    kTimedOut,       // no response within response_start
  };

  // Prepares `req` (its body and headers, hop-by-hop headers dropped) for
  // `address` ("host:port") at `target` (path and query). Nothing is sent
  // before WaitForResponse. `pool` (may be null: a connection of its own,
  // closed after the response) outlives the Forward.
  Forward(const httplib::Request& req, const std::string& target,
          const std::string& address, const ForwardTimeouts& timeouts,
          UpstreamPool* pool = nullptr);
  ~Forward();  // closes the upstream connection unless it went back
  Forward(const Forward&) = delete;
  Forward& operator=(const Forward&) = delete;

  Start WaitForResponse();
  int status() const { return status_; }
  const httplib::Headers& headers() const { return headers_; }
  std::string error() const { return why_; }
  const std::string& address() const { return address_; }
  absl::Time started() const { return started_; }
  // How WaitForResponse got its connection.
  bool reused() const { return reused_; }
  // A reused connection ended unanswered and a new one was made.
  bool stale() const { return stale_; }

  // Writes what the pod sent next to `sink`, waiting for it; false to end
  // the response (upstream done: after sink.done(); broken, idle or over
  // the total: without it, so the client sees a truncated response).
  bool Pump(httplib::DataSink& sink);
  void Cancel();

  static constexpr size_t kReadBytes = size_t{16} << 10;
  static constexpr size_t kMaxHeaderBytes = size_t{64} << 10;

 private:
  enum class Io { kOk, kTimedOut, kClosed, kError };

  // Connects within the connect timeout; false (why_ set) when it cannot.
  bool Connect();
  // Sends the request and reads the response's head.
  Start Exchange(absl::Time deadline);
  // `fd` is the connection now (shut down at once when already cancelled).
  void Adopt(int fd);
  // Closes the connection (not to be reused).
  void Close();
  // After the response was read whole: back to the pool when it can carry
  // another request, else closed.
  void Release();
  // Waits for the socket to be readable (POLLIN) or writable until
  // `deadline`; kClosed when cancelled.
  Io Wait(short events, absl::Time deadline);
  // Appends what arrived to buf_ (kClosed at the end of the stream).
  Io Read(absl::Time deadline);
  bool ParseHead(size_t end);
  // Takes body bytes out of buf_ (framing removed) into `out`; false on a
  // malformed chunked body.
  bool Decode(std::string& out);
  bool Fail(std::string why);

  const ForwardTimeouts timeouts_;
  const std::string address_;
  const absl::Time started_;
  const bool head_;  // a HEAD request: no body comes back
  std::string request_;
  UpstreamPool* const pool_;
  std::mutex fd_mu_;  // fd_ changing (this thread) vs Cancel (any thread)
  std::atomic<int> fd_{-1};
  std::atomic<bool> cancelled_{false};
  bool reused_ = false;
  bool stale_ = false;
  bool answered_ = false;    // a byte came back on this connection
  bool drained_ = true;      // nothing to read: Read waits first
  bool keep_alive_ = false;  // the pod lets the connection carry another
  std::string why_;
  int status_ = 0;
  httplib::Headers headers_;
  std::string buf_;  // read, not yet consumed
  Framing framing_ = Framing::kNone;
  uint64_t remaining_ = 0;  // of the body (kLength)
  ChunkedDecoder chunked_;  // kChunked
  bool done_ = false;
};

}  // namespace pilotlight::http
