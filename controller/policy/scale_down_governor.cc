#include "controller/policy/scale_down_governor.h"

#include <algorithm>
#include <cmath>

namespace pilotlight::policy {

ScaleDownGovernor::ScaleDownGovernor()
    : load_targets_(kReach, absl::Seconds(10)) {}

ScaleTarget ScaleDownGovernor::Govern(const GovernorInput& in,
                                      const EndpointSpec& spec,
                                      const DeciderConfig& config) {
  ScaleTarget t = Stabilise(in, spec, config);
  if (const int paid = PaidFloor(in, config, t); paid > t.target) {
    t.target = paid;
    t.reason = ScaleReason::kScaleDownHeld;
  }
  Limit(in, spec, config, t);
  last_target_ = t.target;
  last_target_tier_ = in.tier;
  RecordLevels(t.target, in.now, in.billing);
  return t;
}

ScaleTarget ScaleDownGovernor::Stabilise(const GovernorInput& in,
                                         const EndpointSpec& spec,
                                         const DeciderConfig& config) {
  ScaleTarget t;
  const int asked = in.load + in.warm;
  load_targets_.Record(in.now, asked);
  TrackReneeds(last_raw_target_, asked, in.now);
  t.stabilisation =
      std::max({config.scale_down_stabilization, in.lead, LearnedHold(spec)});
  const int stabilised = std::max(
      asked, static_cast<int>(
                 load_targets_.Max(in.now, t.stabilisation).value_or(asked)));
  t.scale_down_delayed = stabilised > asked;
  last_raw_target_ = asked;
  t.target = asked;
  t.reason = in.warm > 0 && !in.idle ? ScaleReason::kWarmPool : in.load_reason;
  if (in.idle) {
    // Idle: the keep-alive rules the last replica; replicas beyond it step
    // down through the stabilisation window like any scale-down.
    const int extra = stabilised > 1 ? stabilised : 0;
    t.target = std::max(in.idle_floor, extra);
    t.reason =
        t.target > in.idle_floor ? ScaleReason::kScaleDownHeld : in.idle_reason;
  } else if (stabilised > t.target) {
    t.target = stabilised;
    t.reason = ScaleReason::kScaleDownHeld;
  }
  if (in.ready == 0 && t.target > 0 && !in.idle) {
    t.reason = ScaleReason::kScaleFromZero;
  }
  return t;
}

void ScaleDownGovernor::Limit(const GovernorInput& in, const EndpointSpec& spec,
                              const DeciderConfig& config,
                              ScaleTarget& t) const {
  // The total this tier was asked for: the last target (spot fallback and
  // make-before-break extras are not part of it), or what runs now on the
  // first call and after a tier change.
  const int current = last_target_ >= 0 && last_target_tier_ == in.tier
                          ? last_target_
                          : in.tier_desired;
  if (in.partial && t.target < current) {
    t.target = current;
    t.reason = ScaleReason::kPartialDemand;
  }
  // Saturated: the stable window's lagging average is no ground for a
  // scale-down while every slot is busy and requests wait.
  if (in.saturated && t.target < current) {
    t.target = current;
    t.reason = ScaleReason::kSaturated;
  }
  // Rising: the demand now is above the stable window's average, which
  // lags it -- no ground for a scale-down while demand climbs.
  if (in.rising && t.target < current) {
    t.target = current;
    t.reason = ScaleReason::kRising;
  }
  if (t.target < current) {
    const int limited = static_cast<int>(
        std::floor(current / std::max(1.0, config.max_scale_down_rate)));
    if (limited > t.target) {
      t.target = limited;
      t.reason = ScaleReason::kScaleDownLimited;
    }
    if (in.panic && current > t.target) {
      t.target = current;
      t.reason = ScaleReason::kPanic;
    }
  }
  if (t.target < spec.min_replicas) {
    t.target = spec.min_replicas;
    t.reason = ScaleReason::kMinReplicas;
  }
  if (t.target > spec.max_replicas) {
    t.target = spec.max_replicas;
    t.reason = ScaleReason::kMaxReplicas;
  }
}

void ScaleDownGovernor::SkipQuiet(absl::Time first, absl::Duration step,
                                  int64_t n) {
  const absl::Time last = first + step * (n - 1);
  for (int64_t i = 0; i < n; ++i) {
    const absl::Time t = first + step * i;
    if (t > last - kReach) {
      load_targets_.Record(t, last_raw_target_);
    }
  }
}

// Billing: replicas above the target still inside a paid period stay until
// its last `billing_release_margin` (a release lands before the next period
// starts). A scale-down removes the newest replicas (a ReplicaSet's
// choice), so releasing level k releases every level above it too: at the
// lowest level above the target whose period is ending, everything from it
// up goes (the ones above have paid for time not yet used, but that is
// spent whatever happens; keeping them would carry level k into a new
// period). Off at per-second-like billing.
int ScaleDownGovernor::PaidFloor(const GovernorInput& in,
                                 const DeciderConfig& config,
                                 ScaleTarget& t) const {
  const absl::Duration g = in.billing;
  const int top = static_cast<int>(level_started_.size());
  if (g < DeciderConfig::kBillingHoldMin || top <= t.target) {
    return t.target;
  }
  std::optional<absl::Time> soonest;
  for (int k = std::max(1, t.target + 1); k <= top; ++k) {
    const absl::Time started = level_started_[static_cast<size_t>(k - 1)];
    absl::Duration rem;
    const int64_t periods = absl::IDivDuration(in.now - started, g, &rem) + 1;
    const absl::Time paid_end = started + g * periods;
    if (in.now >= paid_end - config.billing_release_margin) {
      // k's period is ending: from k up they go; those below k stay.
      if (k - 1 > t.target) {
        t.paid_until = soonest;
        t.scale_down_delayed = true;
      }
      return std::max(t.target, k - 1);
    }
    soonest = soonest ? std::min(*soonest, paid_end) : paid_end;
  }
  t.paid_until = soonest;
  t.scale_down_delayed = true;
  return top;
}

void ScaleDownGovernor::RecordLevels(int target, absl::Time now,
                                     absl::Duration billing) {
  if (billing < DeciderConfig::kBillingHoldMin) {
    return;
  }
  const auto n = static_cast<size_t>(std::max(0, target));
  if (level_started_.size() > n) {
    level_started_.resize(n);
  }
  while (level_started_.size() < n) {
    level_started_.push_back(now);
  }
}

// A level k >= 2 the load target falls below is pending from then; when the
// target reaches it again the gap is recorded. A level pending past the
// histogram's range is recorded as out of range (a level that never comes
// back must not leave only the short gaps).
void ScaleDownGovernor::TrackReneeds(int before, int now_target,
                                     absl::Time now) {
  const int top = std::min(std::max(before, now_target), kTrackedLevels + 1);
  if (std::ssize(dropped_at_) < top - 1) {
    dropped_at_.resize(static_cast<size_t>(std::max(0, top - 1)),
                       absl::InfiniteFuture());
  }
  const absl::Duration range = IdleHistogram::kBin * IdleHistogram::kBins;
  bool evidence = false;
  for (int k = 2; k <= std::ssize(dropped_at_) + 1; ++k) {
    absl::Time& at = dropped_at_[static_cast<size_t>(k - 2)];
    if (k <= now_target) {
      if (at != absl::InfiniteFuture()) {
        reneed_gaps_.Record(now - at);
        at = absl::InfiniteFuture();
        evidence = true;
      }
    } else if (k <= before && at == absl::InfiniteFuture()) {
      at = now;
    } else if (at != absl::InfiniteFuture() && now - at > range) {
      reneed_gaps_.Record(now - at);
      at = absl::InfiniteFuture();
      evidence = true;
    }
  }
  if (evidence) {
    reneed_events_ = std::min(reneed_events_ + 1, IdleHistogram::kMinSamples);
  }
}

// Keep replicas above the first until at most the SLO's cold-start fraction
// of the re-needs would come after the hold, up to the window's reach --
// scaled by the evidence: a fifth of that span per call that recorded a
// re-need, in full from the fifth. Evidence counts per call, not per level:
// the levels one burst drops and needs again together are one observation
// of its gap.
absl::Duration ScaleDownGovernor::LearnedHold(const EndpointSpec& spec) const {
  if (reneed_events_ == 0) {
    return absl::ZeroDuration();
  }
  const absl::Duration full = std::min(
      reneed_gaps_.KeepAliveCovering(spec.slo.max_cold_start_fraction), kReach);
  return full * reneed_events_ / IdleHistogram::kMinSamples;
}

size_t ScaleDownGovernor::HeapBytes() const {
  return load_targets_.HeapBytes() +
         dropped_at_.capacity() * sizeof(absl::Time) +
         level_started_.capacity() * sizeof(absl::Time);
}

}  // namespace pilotlight::policy
