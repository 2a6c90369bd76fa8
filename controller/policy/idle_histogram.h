// IdleHistogram: the per-endpoint distribution of idle gaps (end of activity
// to the next request) and the "hybrid histogram" keep-alive policy of
// Serverless in the Wild (Shahrad et al., USENIX ATC'20, section 4.2), with
// the parameters of the dslab reproduction:
//
//   1-minute bins over a 4-hour range (240 bins) + an out-of-range counter.
//   - out-of-range gaps >= 50 % of samples: the histogram cannot see them;
//     the paper fits ARIMA, we predict the next long gap p with an EWMA of
//     the long gaps (the series is near-constant for timer-like endpoints)
//     and pre-warm at 0.85 p, keeping warm until 1.15 p (its 15 % margins);
//   - fewer than `min_samples` gaps, or bin counts with a coefficient of
//     variation below 2 (no clear pattern): not representative -- no
//     pre-warm, keep warm for the whole range (the caller bounds it);
//   - otherwise: head = 5th-percentile bin, tail = 99th-percentile bin;
//     pre-warm at head x 0.9 after the gap starts, warm until
//     (tail + 1 bin) x 1.1.
//
// Counts are 16-bit and halved when the total passes `max_samples`, so the
// policy tracks a changing pattern; memory is 240 x 2 bytes + a few fields
// (Azure keeps 960 bytes per app).
#pragma once

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace pilotlight::policy {

class IdleHistogram {
 public:
  static constexpr int kBins = 240;
  static constexpr absl::Duration kBin = absl::Minutes(1);

  enum class Basis {
    kHistogram,         // head/tail percentiles
    kOutOfRange,        // EWMA prediction of long gaps
    kTooFewSamples,     // not enough gaps yet
    kNotRepresentative  // CV of bin counts < 2
  };

  // The warm window for an idle gap, measured from its start: the replica
  // should be ready from `prewarm` (0: keep it from the start) until
  // `warm_until`.
  struct Windows {
    Basis basis = Basis::kTooFewSamples;
    absl::Duration prewarm;
    absl::Duration warm_until;
  };

  void Record(absl::Duration gap);
  Windows Compute() const;
  // Fraction of recorded gaps longer than `k` (out-of-range gaps count as
  // longer than any k in range). 0 with no samples.
  double FractionLonger(absl::Duration k) const;
  // The shortest keep-alive (a bin edge) after which at most `fraction` of
  // the gaps are still going on; the range when even that is too many.
  absl::Duration KeepAliveCovering(double fraction) const;
  // The mean of min(gap, k) over the recorded gaps (bins at their middle,
  // out-of-range gaps as longer than k): the idle time a keep-alive k
  // spends per gap. 0 with no samples.
  absl::Duration MeanClipped(absl::Duration k) const;
  int samples() const { return total_ + oob_; }

  static absl::string_view BasisName(Basis b);

  // Policy parameters (dslab defaults).
  static constexpr double kHead = 0.05;
  static constexpr double kTail = 0.99;
  static constexpr double kMargin = 0.10;
  static constexpr double kCvThreshold = 2.0;
  static constexpr double kOobThreshold = 0.5;
  static constexpr double kOobMargin = 0.15;
  static constexpr int kMinSamples = 5;
  static constexpr int kMaxSamples = 2000;

 private:
  void HalveIfFull();

  std::array<uint16_t, kBins> bins_{};
  int total_ = 0;  // in-range samples
  int oob_ = 0;
  double oob_ewma_s_ = 0;  // EWMA of out-of-range gaps, seconds
};

}  // namespace pilotlight::policy
