// DeciderConfig: the decider's tunables, with units in the names and the
// defaults docs/policy.md explains. They are policy mechanics, not
// per-endpoint economics: the latter come from the spec (SLO, prices, cold
// start), so most users never touch these.
#pragma once

#include "absl/time/time.h"
#include "controller/model/calibration.h"
#include "controller/model/sizing.h"

namespace pilotlight::policy {

struct DeciderConfig {
  // Demand windows (Knative KPA semantics).
  absl::Duration stable_window = absl::Seconds(60);
  absl::Duration panic_window = absl::Seconds(6);
  // Panic when the panic-window demand needs this multiple of the ready
  // replicas; panic ends after a whole stable window below it.
  double panic_threshold = 2.0;
  // Utilisation the load target aims at, of the per-replica capacity at the
  // TPOT SLO (the capacity already is the SLO boundary, so 1.0 by default;
  // Knative's 0.7 is its guard for an unknown capacity).
  double target_utilization = 1.0;

  // Scale-down: the load target is the highest one of the last
  // max(scale_down_stabilization, cold-start lead) -- dropping a replica
  // that would be needed again within one cold start saves nothing -- and
  // falls by at most a factor max_scale_down_rate per decision.
  absl::Duration scale_down_stabilization = absl::Seconds(60);
  double max_scale_down_rate = 2.0;

  // Demand older than this is stale: hold, never scale down.
  absl::Duration stale_after = absl::Seconds(30);

  // Trend: slope over this window, projected one cold-start lead ahead.
  absl::Duration trend_window = absl::Seconds(60);
  // ... only when a line fits the window this well (R^2): a ramp, not a
  // step or noise.
  double trend_min_r2 = 0.8;

  // Idle: the shortest keep-alive (Knative's scale-to-zero grace period),
  // itself bounded by the break-even T*.
  absl::Duration scale_to_zero_grace = absl::Seconds(30);

  // Idle below this concurrency (requests in flight + queued).
  double idle_concurrency = 1e-6;

  // The shortest time the arrival rate at zero (the offered load) is
  // measured over, whatever the samples' spacing: the activator pokes on
  // every request held at zero, and two requests 50 ms apart are no rate
  // of 20 a second. The controller's tick.
  absl::Duration offered_load_min_window = absl::Seconds(2);

  // Tier switch: only when the cheaper tier saves at least this fraction
  // and has been cheaper for `tier_switch_sustain` (hysteresis).
  double tier_switch_min_saving = 0.20;
  absl::Duration tier_switch_sustain = absl::Minutes(10);

  // Spot: a class is unhealthy for this long after a preemption or a
  // failed placement; a spot replica not ready after `spot_placement_timeout`
  // (at least 2 cold-start leads) is a failed placement.
  absl::Duration spot_unhealthy_for = absl::Minutes(5);
  absl::Duration spot_placement_timeout = absl::Minutes(5);

  // Online capacity correction: EWMA weight of each measured tokens/s
  // against the model's prediction, and the clamp on the factor.
  double correction_alpha = 0.2;
  double correction_min = 0.5;
  double correction_max = 2.0;
  // Calibration from the engines' own latency histograms (DemandSample::
  // latency): where the active tier's decode factor is calibrated, it sets
  // the capacity and the tokens/s correction above stands aside.
  model::CalibrationOptions calibration;

  // Billing granularity of the GPUs (hourly-billed instances): above
  // kBillingHoldMin, a replica is never released inside a period it has
  // paid for -- only in the last `billing_release_margin` of one (replicas
  // counted as levels, the newest first, as a ReplicaSet removes them).
  absl::Duration billing_granularity = absl::Seconds(1);
  absl::Duration billing_release_margin = absl::Seconds(60);
  static constexpr absl::Duration kBillingHoldMin = absl::Minutes(5);

  // Cold-start accounting half-life, for the observed cold-start fraction.
  absl::Duration cold_start_budget_half_life = absl::Hours(6);

  // Engine efficiency factors for the sizing model.
  model::EngineTuning tuning;

  // Knative KPA's defaults: 60 s stable, 6 s panic at 200 %, target 70 %,
  // scale-down rate 2x, no extra stabilisation.
  static DeciderConfig Knative() {
    DeciderConfig c;
    c.stable_window = absl::Seconds(60);
    c.panic_window = absl::Seconds(6);
    c.panic_threshold = 2.0;
    c.target_utilization = 0.7;
    c.scale_down_stabilization = absl::ZeroDuration();
    c.max_scale_down_rate = 2.0;
    return c;
  }
};

}  // namespace pilotlight::policy
