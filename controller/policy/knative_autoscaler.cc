#include "controller/policy/knative_autoscaler.h"

#include <algorithm>

namespace pilotlight::policy {

KnativeAutoscaler::KnativeAutoscaler(int slots, double target_utilization,
                                     int min_scale, int max_scale)
    : window_(absl::Seconds(60), absl::Seconds(1)) {
  scaler_.min_scale = std::max(0, min_scale);
  scaler_.max_scale = std::max(0, max_scale);
  spec_.target_value = slots * target_utilization;
  spec_.total_value = slots;
  scaler_.stable_window = absl::Seconds(60);
  scaler_.grace_period = absl::Seconds(30);
  scaler_.progress_deadline = absl::Seconds(600);
  scaler_.target_burst_capacity = spec_.target_burst_capacity;
}

int KnativeAutoscaler::Tick(absl::Time now, double in_flight, double queued,
                            int ready, int current) {
  if (!kpa_) {
    kpa_.emplace(spec_, current, now);
    active_since_ = now;
  }
  window_.Record(now, in_flight + queued);
  const double stable = window_.Average(now, absl::Seconds(60)).value_or(0);
  const double panic = window_.Average(now, absl::Seconds(6)).value_or(0);
  const KpaResult r = kpa_->Scale(now, stable, panic, ready);
  const int desired = r.valid ? r.desired : -1;

  // The PodAutoscaler's Active condition.
  PaActive next = active_;
  if (desired > 0 || queued > 0) {
    next = ready > 0 ? PaActive::kTrue : PaActive::kUnknown;
  }
  if (next != active_) {
    active_ = next;
    active_since_ = now;
  }
  PaStatus pa;
  pa.active = active_;
  pa.active_for = now - active_since_;
  pa.scale_target_initialized = true;
  // The ServerlessService's mode (the KPA reconciler): Proxy -- the
  // activator in the path -- while the revision is wanted at zero, its
  // excess burst capacity is negative (ready x container concurrency <
  // target burst capacity 211 + panic concurrency: most small revisions,
  // most of the time), or the decider knows nothing and the PA is
  // inactive; Serve otherwise. The scale to zero waits the grace period
  // counted from when the activator entered the path.
  const bool proxy = desired == 0 || (r.valid && r.excess_burst_capacity < 0) ||
                     (desired == -1 && active_ == PaActive::kFalse);
  if (!proxy) {
    proxy_since_.reset();
  } else if (!proxy_since_) {
    proxy_since_ = now;
  }
  std::optional<absl::Duration> proxy_for;
  if (proxy_since_) {
    proxy_for = now - *proxy_since_;
  }
  const KpaScaleResult s =
      KpaScale(scaler_, pa, current, desired, proxy_for, true);
  if (s.replicas == 0 && !s.patch && active_ == PaActive::kTrue &&
      pa.active_for >= scaler_.stable_window) {
    active_ = PaActive::kFalse;  // marked inactive; zero after the grace
    active_since_ = now;
  }
  const int out = s.patch ? s.replicas : current;
  settled_ = out == 0 && current == 0 && active_ == PaActive::kFalse &&
             !kpa_->panic_time() && stable == 0 && panic == 0;
  return out;
}

void KnativeAutoscaler::RecordQuiet(absl::Time first, absl::Duration step,
                                    int64_t n) {
  // Only the zeros the window still holds at the last quiet tick.
  const absl::Time last = first + step * (n - 1);
  for (int64_t i = 0; i < n; ++i) {
    const absl::Time t = first + step * i;
    if (t > last - window_.window()) {
      window_.Record(t, 0);
    }
  }
}

}  // namespace pilotlight::policy
