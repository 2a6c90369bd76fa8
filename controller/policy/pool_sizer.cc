#include "controller/policy/pool_sizer.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace pilotlight::policy {

PoolSizerConfig PoolSizerFor(absl::Duration pod_start, int max_pods) {
  return {.spare_pods = 1,
          .scale_down_window = std::max(absl::Minutes(1), pod_start),
          .min_pods = 1,
          .max_pods = std::max(0, max_pods)};
}

PoolSize PoolSizer::Size(absl::Time now, const PoolNeed& need) {
  const int spare = std::max(0, config_.spare_pods);
  const int busy = std::max(0, need.busy);
  const int want = std::max(busy + spare, std::max(0, need.holding));
  while (!wants_.empty() && wants_.back().second <= want) {
    wants_.pop_back();
  }
  wants_.emplace_back(now, want);
  while (wants_.front().first <= now - config_.scale_down_window) {
    wants_.pop_front();  // the last one (now) always stays
  }
  PoolSize out;
  const int held = wants_.front().second;
  out.pods = held;
  if (held > want) {
    out.reason = absl::StrFormat(
        "%d pod(s): kept from the busiest moment of the last %s (%d busy + "
        "%d spare now)",
        held, absl::FormatDuration(config_.scale_down_window), busy, spare);
  } else if (need.holding > busy + spare) {
    out.reason = absl::StrFormat(
        "%d pod(s): what the engines asleep need in memory (%d busy)", held,
        busy);
  } else {
    out.reason =
        absl::StrFormat("%d pod(s): %d busy + %d spare", held, busy, spare);
  }
  if (out.pods < config_.min_pods) {
    out.pods = config_.min_pods;
    out.reason = absl::StrFormat("%d pod(s): the least", out.pods);
  }
  if (config_.max_pods > 0 && out.pods > config_.max_pods) {
    out.pods = config_.max_pods;
    out.reason =
        absl::StrFormat("%d pod(s): the most (%d wanted)", out.pods, held);
  }
  return out;
}

}  // namespace pilotlight::policy
