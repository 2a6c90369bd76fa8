// cpp-httplib (Debian's 0.11.4) set up for bursts of connections. As
// shipped it listens with a backlog of 5 and serves each connection on one
// of max(8, cores - 1) threads for the connection's whole life (keep-alive
// included): a burst of new connections then waits in SYN retransmits
// (seconds), and a few held requests or open streams starve every other
// connection. Here:
//
//   - the listening socket's backlog is raised (listen(2) again on the
//     bound socket, which Linux allows) -- a burst waits for the model,
//     never for the kernel's accept queue;
//   - connections get threads made on demand up to `max_threads` (a held
//     request or an open stream holds one), beyond which they queue;
//   - SO_REUSEADDR instead of the library's SO_REUSEPORT, so a second
//     process cannot silently share the port;
//   - TCP_NODELAY on every connection: a streamed token is sent when it
//     is written, not held back waiting for the peer's delayed ACK.
//
// Used by the activator's admin port and by the model-server stand-in;
// the activator's proxy port has its own server (front_server.h), and its
// connections a GrowingPool from here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/base/host_port.h"
#include "httplib.h"

namespace pilotlight::http {

// Threads made as work comes when no idle one is left, up to `max` (beyond
// that, work waits in order); `min` made at once. Threads stay once made.
// The server's connection pool. A thread that cannot be made (the
// process's thread limit, e.g. a pod's pids limit) caps the pool where it
// is -- work waits for the threads there are -- and says so once through
// `warn`; it never throws into the server's accept loop.
class GrowingPool final : public httplib::TaskQueue {
 public:
  // Makes a thread running `fn` (std::thread; tests make it fail).
  using Spawn = std::function<std::thread(std::function<void()> fn)>;
  using Warn = std::function<void(const std::string& message)>;
  GrowingPool(int min, int max, Spawn spawn = nullptr, Warn warn = nullptr);
  ~GrowingPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void Work();
  void GrowLocked();  // one more thread, if it can be made

  size_t max_;
  const Spawn spawn_;
  const Warn warn_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

struct HttpServerOptions {
  int backlog = 4096;
  // Threads made at start (a burst then does not wait for thread creation)
  // and at most.
  int min_threads = 8;
  int max_threads = 4096;
  int keep_alive_seconds = 5;
  // Requests on one kept-alive connection before the server closes it
  // (cpp-httplib's own default is 5: a client streaming through the
  // activator would reconnect every fifth request). nginx's default.
  int keep_alive_max_requests = 1000;
  // Where the connection pool says it hit the process's thread limit
  // (nullptr: standard error).
  GrowingPool::Warn warn = nullptr;
};

// The listening socket, as the server's socket-options hook saw it.
struct ListenSocket {
  std::atomic<int> fd{-1};
};

// Installs the thread pool and the socket options on `server` (before
// BindHttpServer, which needs the returned socket).
std::shared_ptr<ListenSocket> ConfigureHttpServer(
    httplib::Server& server, const HttpServerOptions& options);

// Binds `host:port` (port 0: any free one) and raises its backlog to
// `backlog`; returns the port.
absl::StatusOr<int> BindHttpServer(httplib::Server& server,
                                   const ListenSocket& socket,
                                   const std::string& host, int port,
                                   int backlog);

}  // namespace pilotlight::http
