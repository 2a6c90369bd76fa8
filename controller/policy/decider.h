// Decider: the policy core. One per endpoint; Decide(snapshot, now) returns
// the replicas per variant with the reasons. Pure: no I/O, no clock reads, no
// threads -- time comes in as `now` and in the samples' timestamps. Each
// stage's state lives in a class of its own, updated only inside Decide:
// the tiers the spec derives (TierTable), what demand teaches
// (DemandLearner), the forecast's panic mode (DemandForecaster), the
// serving tier (TierChooser), the spot fallback (VariantSplitter), the
// keep-alive's price (KeepAlivePricer) and the scale-down windows
// (ScaleDownGovernor). docs/policy.md explains each rule with a worked
// example.
//
// The algorithm, per call:
//   1. Ingest the new demand samples (concurrency = in flight + queued, or
//      arrivals x service time by Little's law when only arrivals are known).
//      No fresh sample within `stale_after`: keep the replicas (valid =
//      false).
//   2. Capacity per replica of each tier = the sizing model's concurrency at
//      the TPOT SLO, corrected by measured/predicted decode speed (EWMA).
//   3. Forecast one cold-start lead L ahead (learned p90, else the model):
//      max(stable-window demand (panic-window demand while panicking),
//          latest demand + rising trend x L,
//          demand x time-of-day ratio(now + L) / ratio(now)).
//      Load replicas = ceil(forecast / capacity).
//   4. Warm pool while active: enough replicas that the (1 - f)-quantile of
//      the endpoint's own rises over L fits in the spare capacity, where f is
//      the SLO's allowed cold-start fraction (at most the load replicas).
//   5. Idle: keep the last replica for the keep-alive, bounded by the
//      ski-rental break-even T* = B / r (B = GPU time burned by a cold start
//      + the SLO penalty, r = the replica's idle price), and pre-warm at the
//      hybrid histogram's head - L until its tail; scale to zero otherwise.
//      The keep-alive exceeds T* only when the observed cold-start fraction
//      is over the SLO budget once an idle gap has been seen.
//   6. No flapping: the load target is the maximum of the last
//      max(stabilisation, L, learned hold); it falls by at most
//      max_scale_down_rate per call; never down while panicking. The
//      learned hold: replicas above the first are kept until at most the
//      SLO's cold-start fraction of the endpoint's own re-needs (a level
//      needed again after the target fell below it) would come later
//      (up to 30 min), a fifth of that span per burst seen re-needing
//      (in full from the fifth). With coarse billing (DeciderConfig::
//      billing_granularity) no replica is released inside a period it has
//      paid for. Bounds [min, max] always hold.
//   7. Tier: the cheapest tier meeting the SLO at the forecast; switch after
//      it has saved >= 20 % for 10 min (at once if the current one cannot
//      meet the SLO), make-before-break.
//   8. Spot/on-demand: Realtime keeps the replicas its current demand needs
//      (and min) on on-demand and puts the rest on spot where cheaper; Batch
//      puts all on spot. While a spot class is unhealthy (recent preemption
//      or failed placement), on-demand replaces the spot replicas that are
//      not ready, until they are.
//
// Thread-safety: none; one Decider per endpoint, called from one thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/decision.h"
#include "controller/policy/demand_forecaster.h"
#include "controller/policy/demand_learner.h"
#include "controller/policy/keep_alive_pricer.h"
#include "controller/policy/scale_down_governor.h"
#include "controller/policy/snapshot.h"
#include "controller/policy/tier_chooser.h"
#include "controller/policy/tier_table.h"
#include "controller/policy/variant_splitter.h"

namespace pilotlight::policy {

class Decider {
 public:
  explicit Decider(DeciderConfig config = {});

  Decision Decide(const Snapshot& s, absl::Time now);

  // For the simulator's idle skipping; the live controller decides every
  // tick and needs neither. After a Decide on a quiet sample (nothing in
  // flight, queued or arriving) in a settled state (idle, no demand left in
  // the windows, no panic, tier switch or delayed scale-down): the first
  // time a Decide on the same quiet input could answer differently -- a
  // keep-alive ending, a pre-warm window opening or closing, spot health
  // expiring, the cold-start budget nearing its threshold. InfinitePast
  // otherwise.
  absl::Time QuietUntil() const { return quiet_until_; }
  // Records what `n` Decide calls on quiet samples at first, first + step,
  // ... (all before QuietUntil()) would have recorded -- demand windows,
  // time-of-day bins, budget decays, the stabilisation window -- without
  // deciding, so a replay that skips them matches one that makes them.
  void SkipQuiet(absl::Time first, absl::Duration step, int64_t n);

  // Bytes of state this decider holds for its endpoint (for the benchmark
  // and capacity planning: 10,000 endpoints per controller).
  size_t StateBytes() const;

  const DeciderConfig& config() const { return config_; }

 private:
  // Rules 1, 3 and 4: replicas for the forecast on the serving tier and the
  // warm pool above them.
  struct LoadPlan {
    absl::Duration lead;  // the serving tier's cold-start lead
    double cap = 0;       // per replica at the target utilisation
    int load = 0;
    int warm = 0;
    bool rising = false;  // the panic window's demand above the stable's
    ScaleReason reason = ScaleReason::kSteady;  // the forecast's, or ahead
    double rise_risk_without_warm = 0;          // P(rise over a lead > spare)
    double rise_risk_with_warm = 0;
  };
  // Rule 5: what an idle endpoint keeps.
  struct IdlePlan {
    KeepAlivePlan keep;
    int floor = 0;
    ScaleReason reason = ScaleReason::kScaledToZero;
    std::string note;
    std::optional<absl::Time> keep_alive_until;
    std::optional<absl::Time> prewarm_at;
    // With an engine that can sleep (SleepState): the kept variant, the
    // keep-alive of its engine asleep, and how many to keep asleep now.
    int sleep_variant = -1;
    KeepAlivePlan sleep;
    int asleep = 0;
    std::optional<absl::Time> asleep_until;
  };
  // Every stage's result, for the message.
  struct Stages {
    const DemandForecast& forecast;
    const TierChoice& tier;
    const LoadPlan& load;
    const IdlePlan& idle;
    const ScaleTarget& target;
    const TierPlan& plan;
  };

  // The stages of Decide, in order, each named after its rule in
  // docs/policy.md.
  std::optional<Decision> CheckSpec(const Snapshot& s);
  void Ingest(const Snapshot& s);
  std::optional<Decision> CheckFreshness(const Snapshot& s, absl::Time now);
  DemandForecast ForecastDemand(const Snapshot& s, absl::Time now);
  LoadPlan SizeLoadAndWarmPool(const Snapshot& s, const DemandForecast& f);
  IdlePlan PlanIdle(const Snapshot& s, const LoadPlan& load, absl::Time now);
  ScaleTarget StabiliseAndBound(const Snapshot& s, const LoadPlan& load,
                                const IdlePlan& idle, absl::Time now);
  TierPlan SplitOverVariants(const Snapshot& s, const DemandForecast& f,
                             TierChoice& choice, const ScaleTarget& target,
                             Decision& d);
  void Summarise(const Stages& st, Decision& d) const;
  void Explain(const Snapshot& s, const Stages& st, absl::Time now,
               Decision& d) const;
  absl::Time QuietHorizon(const Snapshot& s, const IdlePlan& idle,
                          const ScaleTarget& target, absl::Time now) const;

  // The decision that keeps the replicas as they are (never lower than
  // what runs or is asked for), with why.
  Decision KeepReplicas(const Snapshot& s, ScaleReason reason,
                        std::string message) const;
  // The serving tier, or the first before one is chosen.
  int Serving() const { return std::max(chooser_.serving(), 0); }
  // A request's service time on the serving tier at batch 1, and at the
  // batch a replica runs at its capacity (the TPOT SLO's).
  double ServiceSeconds() const;
  double LoadedServiceSeconds() const;

  DeciderConfig config_;
  TierTable tiers_;
  DemandLearner demand_;
  DemandForecaster forecaster_;
  TierChooser chooser_;
  VariantSplitter splitter_;
  KeepAlivePricer keep_alive_;
  KeepAlivePricer asleep_keep_;  // the same, at an engine's price asleep
  ScaleDownGovernor governor_;
  absl::Time quiet_until_ = absl::InfinitePast();
};

}  // namespace pilotlight::policy
