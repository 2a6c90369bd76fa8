// KnativeAutoscaler: Knative Serving's whole scaling loop for one revision,
// as the `knative` baseline runs it -- the KPA decider and its
// scale-to-zero reconciler (knative_kpa.h) with what the KPA reconciler
// keeps around them: the concurrency windows, the PodAutoscaler's Active
// condition (Unknown while activating from zero, True once pods are ready,
// False once marked inactive after a stable window without demand -- the
// activator is then in the path) and the ServerlessService's Proxy mode.
// The simulator's `knative` baseline and `pilotlight controller --policy
// knative` both call it, so a live replay checks the baseline's simulated
// figures too (docs/replay.md). Pure: times come in, nothing is read.
//
// Defaults (config-autoscaler, config-deployment): stable 60 s, panic 6 s
// at 200 %, max scale-up rate 1000, max scale-down rate 2, target
// utilisation 70 % of the container concurrency (here the replica's
// capacity at the SLO), scale-to-zero grace 30 s, pod retention 0,
// progress deadline 600 s.
#pragma once

#include <optional>

#include "absl/time/time.h"
#include "controller/policy/knative_kpa.h"
#include "controller/policy/time_window.h"

namespace pilotlight::policy {

class KnativeAutoscaler {
 public:
  // config-autoscaler's container-concurrency-target-percentage (70 %):
  // the simulator's knative knob default and the live --policy knative.
  static constexpr double kDefaultTargetUtilization = 0.7;

  // `slots`: requests a replica serves at once; the target is
  // slots x target_utilization. `min_scale`, `max_scale`: the revision's
  // autoscaling.knative.dev/min-scale and max-scale (0: unbounded), which
  // the KPA applies to every answer -- the endpoint's replica bounds.
  KnativeAutoscaler(int slots, double target_utilization, int min_scale = 0,
                    int max_scale = 0);

  // One tick at `now` with the requests seen (being served, and waiting:
  // the concurrency is their sum) and the replicas ready and asked for:
  // the replica count to ask for.
  int Tick(absl::Time now, double in_flight, double queued, int ready,
           int current);

  // At zero, inactive, not panicking, no demand in either window: every
  // later tick without demand answers 0 and only records zeros.
  bool settled() const { return settled_; }
  // The zeros `n` quiet ticks `step` apart from `first` leave in the
  // window (what Tick would have recorded).
  void RecordQuiet(absl::Time first, absl::Duration step, int64_t n);

 private:
  TimeBuckets window_;
  KpaSpec spec_;
  KpaScalerConfig scaler_;
  std::optional<KpaDecider> kpa_;
  PaActive active_ = PaActive::kUnknown;
  absl::Time active_since_;
  std::optional<absl::Time> proxy_since_;  // the SKS in Proxy mode since
  bool settled_ = false;
};

}  // namespace pilotlight::policy
