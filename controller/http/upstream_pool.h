// UpstreamPool: idle kept-alive connections to pods, for the next Forward
// to the same pod to reuse instead of connecting again (a TCP handshake,
// a socket and a pod-side accept per request: on the warm path the larger
// part of what the activator added over a bare relay, docs/benchmarks.md).
//
// A connection comes back only after its response was read whole, with
// nothing past it, from a pod that did not ask to close. It stays at most
// `idle` -- shorter than model servers keep an idle connection (uvicorn,
// under vLLM and SGLang, 5 s; cpp-httplib 5 s), so the pod seldom closes
// one the pool still offers -- and a sweeper thread closes it then, so a
// pod that stops is not kept waiting on it. Take checks each connection it
// hands out without blocking (a pod that closed it, or sent something
// unasked, shows as readable): what is left is the race of a pod closing
// just as the request goes out, which Forward meets by trying once more on
// a new connection when a reused one ends before any byte of an answer.
//
// Thread-safe; one mutex, held for a map lookup and a vector push or pop.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace pilotlight::http {

struct UpstreamPoolOptions {
  absl::Duration idle = absl::Seconds(2);  // zero: no reuse
  // At least the requests a pod takes at once from one activator (its
  // concurrency cap: 32 by default, from the sizing model up to vLLM's
  // 256 sequences), so a pod busy at its cap finds a connection for each;
  // the idle time bounds the rest (only what was in use in the last 2 s
  // is kept).
  size_t max_idle_per_pod = 256;
};

class UpstreamPool {
 public:
  explicit UpstreamPool(UpstreamPoolOptions options = {});
  ~UpstreamPool();  // closes every idle connection
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  bool enabled() const { return options_.idle > absl::ZeroDuration(); }
  // An idle connection to `address` ("host:port") the pod has not closed,
  // the most recently used first; -1 when there is none. The caller owns
  // it.
  int Take(const std::string& address);
  // `fd`, a connection to `address` whose last response was read whole,
  // is idle now (closed instead when the pool is off, or the pod has
  // max_idle_per_pod already).
  void Give(const std::string& address, int fd);
  // Closes every idle connection to `address` (it refused a connection,
  // or left the targets).
  void Forget(const std::string& address);
  size_t idle() const;

 private:
  struct Idle {
    int fd;
    absl::Time since;
  };
  void Sweep();

  const UpstreamPoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, std::vector<Idle>, std::less<>> idle_;
  size_t count_ = 0;
  std::thread sweeper_;
};

}  // namespace pilotlight::http
