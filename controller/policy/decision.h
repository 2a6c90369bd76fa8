// Decision: what the decider wants, as a value that explains itself
// (STYLE.md #5). The reason enum goes into metric labels and status
// conditions; the message is one line with the numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/policy/endpoint_spec.h"

namespace pilotlight::policy {

enum class ScaleReason {
  kNoData,            // demand metrics missing or stale: hold
  kInvalidSpec,       // the spec does not validate: hold
  kSteady,            // sized for the observed demand
  kScaleFromZero,     // demand arrived while at zero
  kScaleAhead,        // sized for the demand forecast one cold start ahead
  kPanic,             // burst: sized for the panic window, no scale-down
  kWarmPool,          // headroom for the rise expected within a cold start
  kScaleDownHeld,     // lower target not yet held for the stabilisation window
  kScaleDownLimited,  // scale-down rate limit
  kPartialDemand,     // demand partly out of sight: up for what is seen, never
                      // down
  kSaturated,         // every ready replica at its cap with requests held:
                      // never down
  kRising,            // the panic window's demand above the stable window's
                      // average: never down
  kKeepAlive,         // idle, keeping the last replica(s) for the keep-alive
  kPreWarm,           // idle, replica started ahead of the predicted request
  kScaledToZero,      // idle past the keep-alive
  kMinReplicas,       // raised to the spec's minimum
  kMaxReplicas,       // capped at the spec's maximum
  kSpotFallback,      // spot missing: on-demand replaces it
  kTierSwitch,        // moving to a cheaper (or SLO-meeting) tier
  kUnchanged,         // this variant keeps its replicas
};

absl::string_view ScaleReasonName(ScaleReason r);

// A duration as the decision messages write it: whole seconds, "540 s".
std::string MessageSeconds(absl::Duration d);

struct VariantDecision {
  std::string deployment;
  int32_t replicas = 0;
  int32_t previous = 0;  // the snapshot's desired
  ScaleReason reason = ScaleReason::kUnchanged;
  std::string message;  // why this variant has `replicas`
  // Engines to keep asleep in the shared pool (SleepState): a replica
  // released goes to sleep while fewer are; those beyond it go.
  int32_t asleep = 0;
};

// One GPU tier priced for the forecast: what the tier choice weighed.
struct TierOption {
  std::string gpu_class;
  int32_t replicas = 0;  // for the forecast at the target utilisation
  int32_t on_demand = 0;
  int32_t spot = 0;
  int32_t capacity_per_replica = 0;
  double cost_per_hour = 0;
  bool meets_slo = false;
  bool operator==(const TierOption&) const = default;
};

// The economics behind a decision, in dollars (pilotlight explain).
struct Economics {
  // Ski rental: one cold start costs B (the idle burn of its lead plus the
  // spec's penalty), an idle replica r per hour; break-even T* = B / r.
  double cold_start_cost_usd = 0;
  double idle_cost_per_hour = 0;
  // The warm pool's price, and the cold starts it is expected to prevent:
  // rises beyond the spare capacity within one lead, per hour, without
  // and with it (from the endpoint's recorded rises; 0 before 8 of them).
  double warm_pool_cost_per_hour = 0;
  double cold_starts_per_hour_without_warm = 0;
  double cold_starts_per_hour_with_warm = 0;
  // The cold-start budget's price (rule 5): what the keep-alive it asks
  // beyond the ski-rental one spends in idle time per day, at the endpoint's
  // observed idle gaps and request rate (0 before it has seen a gap), and
  // the cold-start fraction expected without and with it (a pre-warm
  // window's spend is the histogram policy's, not counted here).
  double budget_cost_per_day = 0;
  double cold_fraction_at_break_even = 0;
  double cold_fraction_expected = 0;
  bool budget_capped = false;  // slo.maxKeepAliveCostPerDayUSD bounds it
  // The chosen tier's replicas on demand only, against its plan's split.
  double on_demand_only_cost_per_hour = 0;
  bool spot_unhealthy = false;    // preempted or unplaceable lately
  std::vector<TierOption> tiers;  // every tier, in spec order
};

struct Decision {
  // False when the decider lacks data (metrics missing, spec invalid): the
  // replicas are then the current ones (never lower), with the reason.
  bool valid = false;
  ScaleReason reason = ScaleReason::kNoData;
  std::string message;
  std::vector<VariantDecision> variants;  // parallel to spec.variants

  std::string tier;               // the GPU class serving the load
  int32_t load_replicas = 0;      // replicas the forecast load needs
  int32_t warm_pool = 0;          // replicas beyond that
  double demand_concurrency = 0;  // stable-window demand, in flight + queued
  double forecast_concurrency = 0;
  int32_t capacity_per_replica = 0;  // concurrent sequences at the TPOT SLO
  // The sizing model's capacity before any correction, the calibrated
  // decode factor in use (observed / predicted step time; 1 when none) and
  // how the calibration stands, in one line.
  int32_t model_capacity_per_replica = 0;
  double decode_calibration = 1.0;
  std::string calibration;
  bool panic = false;
  absl::Duration cold_start_lead;  // the lead time used
  absl::Duration keep_alive;       // chosen for the current/next idle gap
  absl::Duration break_even;       // ski-rental T* = B / r
  std::optional<absl::Time> keep_alive_until;  // while idle
  std::optional<absl::Time> prewarm_at;        // while idle, when predicted
  // With an engine that can sleep: how long an idle endpoint keeps it
  // asleep (the keep-alive priced at its share of the pool), and until
  // when, while idle.
  absl::Duration asleep_keep;
  std::optional<absl::Time> asleep_until;
  double cost_per_hour = 0;  // of the decided replicas
  // The counterfactual: the load's replicas (at least one) of this tier's
  // on-demand variant (else spot), never scaled to zero.
  double always_on_cost_per_hour = 0;
  Economics economics;
};

}  // namespace pilotlight::policy
