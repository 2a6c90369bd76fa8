// Two small, bounded records of an endpoint's past demand that the decider
// forecasts from:
//
// RiseTracker -- how much the demand (concurrency) rose over one cold-start
//   lead, sampled every 10 s while the endpoint is active. The warm pool is
//   sized from a high quantile of these rises: a replica asked for when the
//   rise starts is ready only one cold start later.
//
// SeasonalProfile -- the time-of-day shape of demand: 96 bins of 15 minutes,
//   each an EWMA (alpha 0.5) of that bin's mean concurrency over the days
//   seen. Once a full day is recorded, Ratio(now, lead) says how demand at
//   now + lead compares with now (e.g. 1.8 on the morning ramp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "controller/policy/time_window.h"

namespace pilotlight::policy {

class RiseTracker {
 public:
  static constexpr absl::Duration kGranularity = absl::Seconds(10);
  static constexpr absl::Duration kHorizon = absl::Minutes(12);
  static constexpr int kRises = 128;

  RiseTracker() : levels_(kHorizon, kGranularity) {}

  // Records the demand level; once per 10 s slot it also records the rise
  // since now - lead (leads beyond the horizon are capped at it) -- unless
  // the level one lead ago falls at or before `censored_until`: the demand
  // then was not all seen (the decider's rule: at zero with requests
  // refused), so a rise from it is the recovery, not the endpoint's own.
  void Record(absl::Time t, double concurrency, absl::Duration lead,
              absl::Time censored_until = absl::InfinitePast());

  // The q-quantile of the recorded rises (>= 0); nullopt with fewer than
  // 8 rises recorded.
  std::optional<double> Quantile(double q) const;
  // Fraction of recorded rises strictly greater than `x`.
  double FractionAbove(double x) const;
  int count() const { return count_; }
  size_t HeapBytes() const { return levels_.HeapBytes(); }

 private:
  TimeBuckets levels_;
  std::array<float, kRises> rises_{};
  int count_ = 0;  // rises recorded (ring fills to kRises)
  int next_ = 0;
  int64_t last_slot_ = -1;
};

class SeasonalProfile {
 public:
  static constexpr int kBins = 96;
  static constexpr absl::Duration kBin = absl::Minutes(15);

  void Record(absl::Time t, double concurrency);
  // demand(now + lead) / demand(now) from the profile, once a full day has
  // been recorded and both bins hold data; nullopt otherwise.
  std::optional<double> Ratio(absl::Time now, absl::Duration lead) const;

 private:
  static int BinOf(absl::Time t);
  void Fold();

  std::array<float, kBins> level_{};
  std::array<bool, kBins> seen_{};
  std::optional<absl::Time> first_;
  int64_t open_bin_ = -1;  // absolute 15-minute index being accumulated
  double open_sum_ = 0;
  int open_count_ = 0;
};

}  // namespace pilotlight::policy
