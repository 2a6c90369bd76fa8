// File: controller/policy/decider.h
//
// Decider: the policy core. One per endpoint; Decide(snapshot, now) returns
// the replicas per variant with the reasons. Pure: no I/O, no clock reads, no
// threads -- time comes in as `now` and in the samples' timestamps. State the
// policy learns (demand windows, idle-gap histogram, rises, time-of-day
// profile, panic mode, tier and spot-fallback state) lives in private members
// updated only inside Decide. docs/policy.md explains each rule with a worked
// example.
//
// The algorithm, per call:
//   1. Ingest the new demand samples (concurrency = in flight + queued, or
//      arrivals x service time by Little's law when only arrivals are known).
//      No fresh sample within `stale_after`: hold (valid = false).
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
//      is over the SLO budget.
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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/model/calibration.h"
#include "controller/model/sizing.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/decision.h"
#include "controller/policy/demand_history.h"
#include "controller/policy/idle_histogram.h"
#include "controller/policy/snapshot.h"
#include "controller/policy/time_window.h"

namespace pilotlight::policy {

class Decider {
 public:
  explicit Decider(DeciderConfig config = {});

  Decision Decide(const Snapshot& s, absl::Time now);

  // For the simulator's idle skipping; the live controller decides every
  // tick and needs neither. After a Decide on a quiet sample (nothing in
  // flight, queued or arriving) in a settled state (idle, no demand left in
  // the windows, no panic, tier switch or held scale-down): the first time a
  // Decide on the same quiet input could answer differently -- a keep-alive
  // ending, a pre-warm window opening or closing, spot health expiring, the
  // cold-start budget nearing its threshold. InfinitePast otherwise.
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
  struct Variant {
    int tier = 0;
    double price_per_replica_hour = 0;
    absl::Duration lead_estimate;      // the cold-start model's, node free
    absl::Duration node_provisioning;  // added while no node is free
    absl::Duration billing;            // its class's, else the config's
  };
  struct Tier {
    std::string gpu_class;  // of its first variant
    std::string gpu_model;
    int on_demand = -1;  // variant index
    int spot = -1;
    std::optional<model::ReplicaModel> replica;
    int model_capacity = 0;  // at the TPOT SLO, uncorrected
    double ttft_s = 0;
    double correction = 1.0;  // measured / predicted decode speed
    bool fallback = false;    // on-demand replacing missing spot
    // Observed / predicted step times from the engines' histograms.
    model::Calibrator calibrator;
  };
  struct TierPlan {
    int replicas = 0;
    int on_demand = 0;
    int spot = 0;
    double cost_per_hour = 0;
    bool meets_slo = false;
  };

  struct KeepAlivePlan {
    absl::Duration keep_alive;
    absl::Duration break_even;                               // ski-rental T*
    double cold_start_cost_usd = 0;                          // B
    double idle_cost_per_hour = 0;                           // r
    absl::Duration prewarm_from = absl::InfiniteDuration();  // into the gap
    IdleHistogram::Windows windows;
    std::string cause;  // why keep_alive > break_even, when it is
    // Economics::budget_cost_per_day and the rest.
    double budget_cost_per_day = 0;
    double cold_fraction_at_break_even = 0;
    double cold_fraction_expected = 0;
    bool budget_capped = false;
  };

  // The working values of one Decide call, passed stage to stage.
  struct Step {
    const Snapshot* s = nullptr;
    absl::Time now;
    int ready_total = 0;
    int asked_total = 0;  // max(desired, ready) over the variants
    // ForecastDemand
    double stable = 0;    // stable-window concurrency
    double base = 0;      // stable, or the panic window's while panicking
    double forecast = 0;  // one cold-start lead ahead
    ScaleReason load_reason = ScaleReason::kSteady;
    std::string forecast_note;
    // ChooseTier
    std::vector<bool> unhealthy;           // per tier: spot unhealthy
    std::string tier_note;                 // set when a switch starts
    std::vector<TierOption> tier_options;  // every tier priced
    // SizeLoadAndWarmPool
    absl::Duration tier_lead;
    double cap = 0;  // per replica at the target utilisation
    int load = 0;
    int warm = 0;
    double rise_risk_without_warm = 0;  // P(rise over a lead > spare)
    double rise_risk_with_warm = 0;
    // PlanIdle
    KeepAlivePlan keep;
    int idle_floor = 0;
    ScaleReason idle_reason = ScaleReason::kScaledToZero;
    std::string idle_note;
    std::optional<absl::Time> keep_alive_until;
    std::optional<absl::Time> prewarm_at;
    // StabiliseAndBound
    bool held = false;    // the stabilisation window holds load + warm higher
    absl::Duration hold;  // the stabilisation window's span this call
    std::optional<absl::Time> paid_until;  // a billing hold's end, if any
    int target = 0;
    ScaleReason reason = ScaleReason::kSteady;
    // SplitOverVariants
    TierPlan plan;
  };

  // The stages of Decide, in order, each named after its rule in
  // docs/policy.md.
  std::optional<Decision> CheckInputs(const Snapshot& s, absl::Time now);
  void ForecastDemand(Step& st);
  void ChooseTier(Step& st);
  void SizeLoadAndWarmPool(Step& st);
  void PlanIdle(Step& st);
  void StabiliseAndBound(Step& st);
  Decision SplitOverVariants(Step& st);
  void Explain(const Step& st, Decision& d) const;
  absl::Time QuietHorizon(const Step& st) const;

  int ReplicasFor(int tier, double demand) const;
  absl::Status Derive(const Snapshot& s);
  KeepAlivePlan PlanKeepAlive(const EndpointSpec& spec, const Tier& tier,
                              absl::Duration tier_lead) const;
  double GapsPerDay(absl::Time now) const;
  void Ingest(const Snapshot& s);
  int Capacity(const Tier& t) const;
  absl::Duration Lead(const Snapshot& s, int tier) const;
  bool SpotUnhealthy(const Snapshot& s, const Tier& t, absl::Time now,
                     absl::Duration lead) const;
  // `keep_ready`: when the replicas fit in the ready ones, keep those
  // (idle endpoints: the kept replica never moves between capacity types).
  TierPlan Plan(const Snapshot& s, int tier, int replicas, double demand,
                bool spot_unhealthy, bool keep_ready = false) const;
  // A request's service time on the serving tier at `batch`: at 1
  // (ServiceSeconds), and at the batch a replica runs at its capacity, the
  // TPOT SLO's (LoadedServiceSeconds).
  double ServiceSecondsAt(const EndpointSpec& spec, int batch) const;
  double ServiceSeconds(const EndpointSpec& spec) const;
  double LoadedServiceSeconds(const EndpointSpec& spec) const;
  Decision Hold(const Snapshot& s, ScaleReason reason, std::string message);

  DeciderConfig config_;

  // Derived from the spec (rebuilt when its generation changes).
  int64_t generation_ = -1;
  const EndpointSpec* spec_seen_ = nullptr;
  const model::Catalog* catalog_seen_ = nullptr;
  absl::Status spec_status_;
  std::vector<Variant> variants_;
  std::vector<Tier> tiers_;

  // Learned from demand.
  TimeBuckets demand_;        // concurrency, 1 s buckets
  WindowedMax load_targets_;  // for scale-down stabilisation
  RiseTracker rises_;
  // The last sample at which demand was censored: no replica ready and
  // fewer requests held than arrived since the endpoint went to zero (the
  // activator refused some, or they gave up). Rises from then on are
  // the recovery's, not recorded (RiseTracker::Record).
  absl::Time censored_at_ = absl::InfinitePast();
  SeasonalProfile season_;
  IdleHistogram idle_gaps_;
  absl::Time first_sample_at_ = absl::InfinitePast();  // none yet
  // The keep-alive's price and its bound (PlanKeepAlive asks every call; it
  // changes only with the histogram, the gap rate, the keep-alive asked or
  // the bound), on the heap once the endpoint has had an idle gap: a busy
  // endpoint has nothing to price and does not carry it.
  struct BudgetPrice {
    double idle_gaps_per_day = 0;  // GapsPerDay when the idle gap began
    uint32_t version = UINT32_MAX;
    double gaps_per_day = -1;
    absl::Duration ski_keep;
    absl::Duration asked;
    std::optional<double> cap;
    absl::Duration lead;  // the pre-warm's, for the cold fractions
    absl::Duration keep;  // what the bound leaves of `asked`
    double cost_per_day = 0;
    double needs_per_day = 0;  // of `asked`
    double longer_than_ski = 0;
    double longer_than_keep = 0;  // P(gap not covered)
  };
  mutable std::unique_ptr<BudgetPrice> budget_;
  std::optional<absl::Time> last_sample_at_;
  std::optional<absl::Time> last_active_at_;
  bool idle_ = true;
  absl::Time idle_since_;
  double last_concurrency_ = 0;

  // Cold-start budget: exponentially decayed request and gap counts, and
  // the requests a cold start delays (those of a busy period's first lead).
  double requests_ = 0;
  double cold_start_requests_ = 0;
  double gaps_ = 0;
  double requests_per_cold_start_ = 0;
  bool counting_burst_ = false;
  absl::Time burst_start_;
  double burst_requests_ = 0;
  // Since when no replica has been ready with requests arriving
  // (InfiniteFuture: some is), and how many arrived: the offered load at
  // zero, up to the last sample.
  absl::Time at_zero_since_ = absl::InfiniteFuture();
  double at_zero_arrivals_ = 0;

  // Modes.
  int last_target_ = -1;  // the total asked for last time, on that tier
  int last_target_tier_ = -1;
  bool panic_ = false;
  absl::Time panic_until_;
  bool demand_partial_ = false;  // the latest sample was a lower bound
  // The latest sample found every ready replica at its cap and requests
  // held: its in-flight figure is censored at the capacity.
  bool saturated_ = false;
  int tier_ = -1;
  std::string calibrated_model_;  // whose calibrators tiers_ hold
  int switching_from_ = -1;
  int candidate_tier_ = -1;
  absl::Time candidate_since_;

  // Learned hold for replicas above the first (rule 6): per level k >= 2
  // (index k - 2, up to kTrackedLevels), when the load target last fell
  // below it; the gaps until it was needed again.
  static constexpr int kTrackedLevels = 64;
  std::vector<absl::Time> dropped_at_;  // InfiniteFuture: not pending
  IdleHistogram reneed_gaps_;
  // Calls that recorded a gap (the hold's evidence), up to kMinSamples.
  int reneed_events_ = 0;
  void TrackReneeds(int before, int now_target, absl::Time now);
  absl::Duration LearnedHold(const EndpointSpec& spec) const;

  // Billing: when each replica level (index k - 1) was started; a level is
  // released only near the end of a paid period (DeciderConfig).
  std::vector<absl::Time> level_started_;
  // The target kept up for the periods already paid; sets st.held.
  int PaidFloor(Step& st, int target) const;
  // The billing period of the tier serving (its on-demand variant's, else
  // its spot variant's).
  absl::Duration Billing() const;
  void RecordLevels(int target, absl::Time now);

  // Idle skipping (QuietUntil, SkipQuiet).
  absl::Time quiet_until_ = absl::InfinitePast();
  int last_raw_target_ = 0;
  uint32_t gaps_recorded_ = 0;  // idle_gaps_ records (BudgetPrice's key)
};

}  // namespace pilotlight::policy
