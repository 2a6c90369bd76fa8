#include "controller/policy/knative_kpa.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace pilotlight::policy {

KpaDecider::KpaDecider(const KpaSpec& spec, int32_t initial_scale,
                       absl::Time now)
    : spec_(spec), max_panic_pods_(initial_scale) {
  if (initial_scale > 1) {
    panic_time_ = now;
  }
  if (spec.scale_down_delay > absl::ZeroDuration()) {
    delay_window_.emplace(spec.scale_down_delay, absl::Seconds(2));
  }
}

KpaResult KpaDecider::Scale(absl::Time now, std::optional<double> stable,
                            std::optional<double> panic,
                            std::optional<int32_t> ready) {
  const int32_t original_ready = ready.value_or(0);
  const double ready_pods = std::max(1.0, static_cast<double>(original_ready));
  if (!stable || !panic) {
    return {};  // no data: no decision
  }
  const double max_up = std::ceil(spec_.max_scale_up_rate * ready_pods);
  const double max_down =
      spec_.reachable ? std::floor(ready_pods / spec_.max_scale_down_rate) : 0;
  const double dspc = std::ceil(*stable / spec_.target_value);
  const double dppc = std::ceil(*panic / spec_.target_value);
  auto desired_stable =
      static_cast<int32_t>(std::min(std::max(dspc, max_down), max_up));
  auto desired_panic =
      static_cast<int32_t>(std::min(std::max(dppc, max_down), max_up));
  if (spec_.activation_scale > 1) {
    if (dspc > 0 && spec_.activation_scale > desired_stable) {
      desired_stable = spec_.activation_scale;
    }
    if (dppc > 0 && spec_.activation_scale > desired_panic) {
      desired_panic = spec_.activation_scale;
    }
  }
  const bool over = dppc / ready_pods >= spec_.panic_threshold;
  if (over) {
    panic_time_ = now;  // start, or extend, the panic
  } else if (panic_time_ && *panic_time_ + spec_.stable_window < now) {
    panic_time_.reset();
    max_panic_pods_ = 0;
  }
  int32_t desired = desired_stable;
  if (panic_time_) {
    desired = std::max(desired, desired_panic);
    if (desired > max_panic_pods_) {
      max_panic_pods_ = desired;
    } else if (desired < max_panic_pods_) {
      desired = max_panic_pods_;
    }
  }
  if (delay_window_) {
    // Recorded always; applied only while the revision is reachable (an
    // unreachable one scales down at once).
    delay_window_->Record(now, desired);
    if (spec_.reachable) {
      desired = static_cast<int32_t>(
          delay_window_->Max(now, spec_.scale_down_delay).value_or(desired));
    }
  }
  double ebc = -1;
  if (spec_.target_burst_capacity == 0) {
    ebc = 0;
  } else if (spec_.target_burst_capacity > 0) {
    ebc = std::floor(original_ready * spec_.total_value -
                     spec_.target_burst_capacity - *panic);
  }
  return {desired, static_cast<int32_t>(ebc), true};
}

namespace {

constexpr absl::Duration kActivationTimeoutBuffer = absl::Seconds(10);

// handleScaleToZero: the scale to apply, and whether to apply it.
std::pair<int32_t, bool> HandleScaleToZero(
    const KpaScalerConfig& c, const PaStatus& pa, int32_t desired,
    std::optional<absl::Duration> sks_proxy_for, bool probe_ok) {
  if (desired != 0) {
    return {desired, true};
  }
  if (!c.enable_scale_to_zero) {
    return {1, true};
  }
  switch (pa.active) {
    case PaActive::kUnknown:  // activating
      if (pa.active_for > c.progress_deadline + kActivationTimeoutBuffer) {
        return {desired, true};  // activation failed: give up, scale to 0
      }
      return {-1, false};
    case PaActive::kTrue:
      if (pa.active_for >= c.stable_window) {
        return {desired, false};  // mark the PA inactive first
      }
      return {1, true};  // at most one pod until the idle period ends
    case PaActive::kFalse: {
      // With TBC = -1 the activator is always in the path; else probe it.
      const bool activator_in_path = c.target_burst_capacity == -1 || probe_ok;
      if (!activator_in_path) {
        return {desired, false};
      }
      const absl::Duration retention =
          c.reachable ? c.last_pod_retention : absl::ZeroDuration();
      if (pa.active_for >= std::max(c.grace_period, retention)) {
        return {desired, true};
      }
      if (sks_proxy_for && *sks_proxy_for >= c.grace_period &&
          pa.active_for >= retention) {
        return {desired, true};
      }
      return {desired, false};
    }
  }
  return {desired, false};
}

}  // namespace

KpaScaleResult KpaScale(const KpaScalerConfig& c, const PaStatus& pa,
                        int32_t current_replicas, int32_t desired,
                        std::optional<absl::Duration> sks_proxy_for,
                        bool probe_ok) {
  if (desired < 0 && pa.active != PaActive::kUnknown) {
    return {desired, false};  // metrics are not collected yet
  }
  int32_t min = c.reachable ? c.min_scale : 0;
  const int32_t max = c.max_scale;
  // Until the initial scale has been reached once (reachable revisions).
  if (c.initial_scale > 1 && !pa.scale_target_initialized && c.reachable) {
    min = std::max(min, c.initial_scale);
  }
  if (desired < min) {
    desired = min;
  } else if (max != 0 && desired > max) {
    desired = max;
  }
  const auto [scale, apply] =
      HandleScaleToZero(c, pa, desired, sks_proxy_for, probe_ok);
  if (!apply) {
    return {scale, false};
  }
  return {scale, scale != current_replicas};
}

}  // namespace pilotlight::policy
