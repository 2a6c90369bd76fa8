// File: controller/activator/forward.h
//
// Forward: one request sent on to one pod, its answer streamed back as it
// comes. cpp-httplib 0.11.4's client is blocking and has no POST with a
// content receiver, so the upstream request runs on a thread of its own
// (from a shared pool)
// (Client::send with a response handler and a content receiver); the
// HTTP worker waits for the status line and headers (WaitForResponse),
// then a chunked content provider pulls the body through Pump as it
// arrives -- the client's first byte goes out before the upstream is
// done. Nothing is parsed (SSE events pass as bytes).
//
// Backpressure: at most `kMaxBufferedBytes` wait between the two sides; a
// slow client slows the upstream read, never grows memory. Cancel (the
// client went away, a timeout) stops the upstream connection at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "httplib.h"

namespace pilotlight::activator {

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

  // Sends `req` (its body and headers, hop-by-hop headers dropped) to
  // `address` ("host:port") at `target` (path and query).
  Forward(const httplib::Request& req, const std::string& target,
          const std::string& address, const ForwardTimeouts& timeouts);
  ~Forward();  // cancels and waits for the upstream request to end
  Forward(const Forward&) = delete;
  Forward& operator=(const Forward&) = delete;

  Start WaitForResponse();
  int status() const { return status_; }
  const httplib::Headers& headers() const { return headers_; }
  std::string error() const;
  const std::string& address() const { return address_; }
  absl::Time started() const { return started_; }

  // Writes what arrived to `sink`, waiting for more; false to end the
  // response (upstream done: after sink.done(); broken, idle or over the
  // total: without it, so the client sees a truncated response).
  bool Pump(httplib::DataSink& sink);
  void Cancel();

  static constexpr size_t kMaxBufferedBytes = size_t{1} << 20;

 private:
  void Run(httplib::Request up);

  const ForwardTimeouts timeouts_;
  const std::string address_;
  const absl::Time started_;
  std::unique_ptr<httplib::Client> client_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool responded_ = false;
  bool done_ = false;
  bool cancelled_ = false;
  httplib::Error error_ = httplib::Error::Success;
  std::string why_;  // of a failure we caused (idle, total)
  int status_ = 0;
  httplib::Headers headers_;
  std::deque<std::string> chunks_;
  size_t buffered_ = 0;
  bool finished_ = false;  // Run returned
};

}  // namespace pilotlight::activator
