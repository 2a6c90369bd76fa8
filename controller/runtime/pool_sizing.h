// The sleep pools' sizes: one policy::PoolSizer per pool Deployment that
// endpoints name (spec.sleepPool) and that opts in with
// pilotlight.dev/max-pool-pods, stepped once a tick however many endpoints
// share the pool. The reconciler of each such endpoint asks; the first ask
// of a tick decides and the others get the same answer.
//
// Thread-safety: Step and Forget may run on several workers at once.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/policy/pool_sizer.h"

namespace pilotlight::runtime {

// On a pool Deployment: the most pods Pilotlight may size it to. Without
// it the pool's size is its owner's.
inline constexpr char kMaxPoolPodsAnnotation[] = "pilotlight.dev/max-pool-pods";

// The annotation's value: a whole number >= 1, else an error naming it.
absl::StatusOr<int> ParseMaxPoolPods(const std::string& value);

class PoolSizing {
 public:
  // The pods pool `key` ("namespace/deployment") should have at `now`,
  // with `busy` of its Ready pods holding an engine awake. A pod starts in
  // `pod_start` (the pool keeps the longest it was told: endpoints of
  // several models share it); at most `max_pods`.
  policy::PoolSize Step(const std::string& key, absl::Time now, int busy,
                        absl::Duration pod_start, int max_pods);
  void Forget(const std::string& key);

 private:
  struct Pool {
    std::optional<policy::PoolSizer> sizer;
    absl::Duration pod_start;
    absl::Time at = absl::InfinitePast();  // the last step
    policy::PoolSize last;
  };
  std::mutex mu_;
  std::map<std::string, Pool> pools_;
};

}  // namespace pilotlight::runtime
