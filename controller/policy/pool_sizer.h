// How many pods a sleep pool should have: the pods whose GPU has an engine
// awake (any endpoint's), a spare for the next wake, and no fewer than hold
// the engines asleep -- the busiest such moment of the last
// `scale_down_window`, so a pod released is not one asked for again
// within a pod's start. Scales up at once: a new pod takes a start (its
// engines loaded, then put to sleep), and until it is Ready the spare is
// what the next wake finds free. Pure: the caller passes the times.
#pragma once

#include <deque>
#include <string>
#include <utility>

#include "absl/time/time.h"

namespace pilotlight::policy {

struct PoolSizerConfig {
  int spare_pods = 1;  // free beyond the busiest moment
  // How long a pool keeps a pod it no longer needs: a pod's start (pool
  // sizes under a minute are noise), so one released is not wanted back
  // before a new one could be Ready.
  absl::Duration scale_down_window = absl::Minutes(1);
  int min_pods = 1;  // engines asleep need a pod to live on
  int max_pods = 0;  // 0: no bound
};

// The controller's rule for a pool whose pods take `pod_start` from asked
// for to Ready: one spare, kept for a pod's start (at least a minute),
// between one pod and `max_pods` (0: no bound). The simulator sizes its
// pools by the same.
PoolSizerConfig PoolSizerFor(absl::Duration pod_start, int max_pods = 0);

// What the pool needs at one moment.
struct PoolNeed {
  int busy = 0;     // pods with an engine awake (their GPUs taken)
  int holding = 0;  // pods the engines asleep and awake need in memory
};

struct PoolSize {
  int pods = 0;
  std::string reason;  // for logs and status: what set it
};

class PoolSizer {
 public:
  explicit PoolSizer(PoolSizerConfig config) : config_(config) {}

  // The pods the pool should have at `now` (calls in time order).
  PoolSize Size(absl::Time now, const PoolNeed& need);

  const PoolSizerConfig& config() const { return config_; }
  // A new rule from the next call on; the window's wants so far stay.
  void set_config(PoolSizerConfig config) { config_ = config; }

 private:
  PoolSizerConfig config_;
  // The wants of the window, falling from the front: each one larger
  // than every later one, so the front is the window's largest.
  std::deque<std::pair<absl::Time, int>> wants_;
};

}  // namespace pilotlight::policy
