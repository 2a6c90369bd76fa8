#include "controller/runtime/pool_sizing.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pilotlight::runtime {

absl::StatusOr<int> ParseMaxPoolPods(const std::string& value) {
  int n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(kMaxPoolPodsAnnotation, " is \"", value,
                     "\", not a whole number >= 1"));
  }
  return n;
}

policy::PoolSize PoolSizing::Step(const std::string& key, absl::Time now,
                                  int busy, absl::Duration pod_start,
                                  int max_pods) {
  const std::lock_guard<std::mutex> lock(mu_);
  Pool& p = pools_[key];
  p.pod_start = std::max(p.pod_start, pod_start);
  const policy::PoolSizerConfig config =
      policy::PoolSizerFor(p.pod_start, max_pods);
  if (!p.sizer) {
    p.sizer.emplace(config);
  } else {
    p.sizer->set_config(config);
  }
  // Another endpoint of the pool asked within this tick: the same answer.
  if (now - p.at < absl::Seconds(1)) {
    return p.last;
  }
  p.at = now;
  p.last = p.sizer->Size(now, {.busy = busy, .holding = 1});
  return p.last;
}

void PoolSizing::Forget(const std::string& key) {
  const std::lock_guard<std::mutex> lock(mu_);
  pools_.erase(key);
}

}  // namespace pilotlight::runtime
