#include "controller/kube/throttle.h"

#include <algorithm>

namespace pilotlight::kube {

Throttle::Throttle(double qps, int burst, const Clock& clock)
    : qps_(qps),
      burst_(std::max(1, burst)),
      clock_(clock),
      tokens_(burst_),
      last_(absl::InfinitePast()) {}

absl::Duration Throttle::Reserve(absl::Time now) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (last_ != absl::InfinitePast() && now > last_) {
    tokens_ =
        std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
  }
  last_ = std::max(last_, now);
  tokens_ -= 1;  // may go negative: a debt later requests wait behind
  if (tokens_ >= 0 || qps_ <= 0) {
    return absl::ZeroDuration();
  }
  return absl::Seconds(-tokens_ / qps_);
}

absl::Duration Throttle::Wait() {
  const absl::Duration d = Reserve(clock_.Now());
  if (d > absl::ZeroDuration()) {
    clock_.SleepFor(d);
  }
  return d;
}

}  // namespace pilotlight::kube
