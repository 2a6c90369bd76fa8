// DemandLearner: what an endpoint's demand samples teach the decider -- the
// concurrency windows (stable, panic, trend), the time-of-day profile, the
// rises over one cold-start lead, the idle gaps and whether the endpoint is
// idle now, the offered load while no replica is ready, and the decayed
// counts behind the cold-start budget. Pure: time comes in the samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/demand_history.h"
#include "controller/policy/idle_histogram.h"
#include "controller/policy/snapshot.h"
#include "controller/policy/time_window.h"

namespace pilotlight::policy {

// What the tiers say about the samples of one decision.
struct SampleContext {
  int ready = 0;  // replicas ready now, over every variant
  // Engines asleep now (SleepState): a request that meets one wakes it, and
  // is not counted as one that met no replica.
  int asleep = 0;
  double ready_slots = 0;  // requests the ready replicas take at once
  double service_s = 0;    // a request's service time at batch 1
  absl::Duration lead;     // the serving tier's cold-start lead
};

// The cold-start budget's evidence: requests seen and those that met no
// ready replica, idle gaps, all decayed with the budget's half-life; and
// the requests a cold start delays (those of a busy period's first lead,
// smoothed over busy periods).
struct ColdStartCounts {
  double requests = 0;
  double cold_start_requests = 0;
  double gaps = 0;
  double requests_per_cold_start = 0;
};

class DemandLearner {
 public:
  explicit DemandLearner(const DeciderConfig& config);

  // Learns from one sample. False when it carries no demand information
  // (seen before or out of order, no concurrency or arrival figure, or a
  // partial sample that saw nothing) and was not recorded.
  bool Observe(const DemandSample& d, const SampleContext& ctx);
  // What `n` quiet samples (nothing in flight, queued or arriving) at
  // first, first + step, ... would have recorded: the windows, the
  // time-of-day profile and the budget's decay.
  void SkipQuiet(absl::Time first, absl::Duration step, int64_t n);

  // Idle gaps per day: the decayed gap count over its own time constant,
  // corrected for a history shorter than that.
  double GapsPerDay(absl::Time now) const;

  const TimeBuckets& concurrency() const { return concurrency_; }
  const SeasonalProfile& season() const { return season_; }
  const RiseTracker& rises() const { return rises_; }
  const IdleHistogram& idle_gaps() const { return idle_gaps_; }
  // Idle gaps recorded so far (a version of idle_gaps()).
  uint32_t gaps_recorded() const { return gaps_recorded_; }
  // GapsPerDay when the current (or last) idle gap began: the rate its
  // keep-alive is priced at, so the price holds still while the gap lasts.
  double gaps_per_day_at_idle() const { return gaps_per_day_at_idle_; }
  const ColdStartCounts& counts() const { return counts_; }
  // A busy period's first lead is being counted.
  bool counting_burst() const { return counting_burst_; }

  bool idle() const { return idle_; }
  absl::Time idle_since() const { return idle_since_; }
  std::optional<absl::Time> last_sample_at() const { return last_sample_at_; }
  double last_concurrency() const { return last_concurrency_; }
  // The latest sample was a lower bound (some demand out of sight).
  bool partial() const { return partial_; }
  // The latest sample found every ready replica at its cap and requests
  // held: its in-flight figure is censored at the capacity.
  bool saturated() const { return saturated_; }
  // Since when no replica has been ready with requests arriving
  // (InfiniteFuture: some is), and how many arrived since.
  absl::Time at_zero_since() const { return at_zero_since_; }
  double at_zero_arrivals() const { return at_zero_arrivals_; }

  size_t HeapBytes() const;

 private:
  // The sample's concurrency: in flight + the backlog's weight, else
  // arrivals x service time (nullopt: neither is known).
  std::optional<double> Concurrency(const DemandSample& d, absl::Duration dt,
                                    const SampleContext& ctx) const;
  void TrackAtZero(const DemandSample& d, absl::Duration dt, int ready);
  void TrackIdle(const DemandSample& d, bool active, double conc,
                 absl::Duration lead);
  void CountRequests(const DemandSample& d, absl::Duration dt, double requests,
                     int ready, absl::Duration lead);

  double idle_concurrency_;
  absl::Duration half_life_;

  TimeBuckets concurrency_;  // 1 s buckets
  SeasonalProfile season_;
  RiseTracker rises_;
  IdleHistogram idle_gaps_;
  uint32_t gaps_recorded_ = 0;
  double gaps_per_day_at_idle_ = 0;
  // The last sample at which demand was censored: no replica ready and
  // fewer requests held than arrived since the endpoint went to zero (the
  // activator refused some, or they gave up). Rises from then on are the
  // recovery's, not recorded (RiseTracker::Record).
  absl::Time censored_at_ = absl::InfinitePast();
  absl::Time first_sample_at_ = absl::InfinitePast();  // none yet
  std::optional<absl::Time> last_sample_at_;
  std::optional<absl::Time> last_active_at_;
  bool idle_ = true;
  absl::Time idle_since_;
  double last_concurrency_ = 0;
  bool partial_ = false;
  bool saturated_ = false;

  ColdStartCounts counts_;
  bool counting_burst_ = false;
  absl::Time burst_start_;
  double burst_requests_ = 0;

  absl::Time at_zero_since_ = absl::InfiniteFuture();
  double at_zero_arrivals_ = 0;
};

// Decays a counter with the given half-life over `dt`.
double Decay(double value, absl::Duration dt, absl::Duration half_life);

}  // namespace pilotlight::policy
