#include "controller/policy/idle_histogram.h"

#include <algorithm>
#include <cmath>

#include "controller/policy/time_window.h"

namespace pilotlight::policy {

absl::string_view IdleHistogram::BasisName(Basis b) {
  switch (b) {
    case Basis::kHistogram:
      return "histogram";
    case Basis::kOutOfRange:
      return "out-of-range";
    case Basis::kTooFewSamples:
      return "too-few-samples";
    case Basis::kNotRepresentative:
      return "not-representative";
  }
  return "?";
}

void IdleHistogram::HalveIfFull() {
  if (total_ + oob_ <= kMaxSamples) {
    return;
  }
  total_ = 0;
  for (uint16_t& b : bins_) {
    b = static_cast<uint16_t>(b / 2);
    total_ += b;
  }
  oob_ /= 2;
}

void IdleHistogram::Record(absl::Duration gap) {
  if (gap < absl::ZeroDuration()) {
    return;
  }
  const int64_t bin = FloorDiv(gap, kBin);
  if (bin >= kBins) {
    const double s = absl::ToDoubleSeconds(gap);
    oob_ewma_s_ = oob_ == 0 ? s : 0.7 * oob_ewma_s_ + 0.3 * s;
    ++oob_;
  } else {
    ++bins_[static_cast<size_t>(bin)];
    ++total_;
  }
  HalveIfFull();
}

double IdleHistogram::FractionLonger(absl::Duration k) const {
  const int n = total_ + oob_;
  if (n == 0) {
    return 0;
  }
  // Gaps in bins at or after k's bin end after k (to within one bin).
  const int64_t first = std::max<int64_t>(0, FloorDiv(k, kBin));
  int longer = oob_;
  for (int64_t i = first; i < kBins; ++i) {
    longer += bins_[static_cast<size_t>(i)];
  }
  return static_cast<double>(longer) / n;
}

absl::Duration IdleHistogram::KeepAliveCovering(double fraction) const {
  const int n = total_ + oob_;
  if (n == 0 || fraction >= 1) {
    return absl::ZeroDuration();
  }
  int longer = n;
  for (int i = 0; i < kBins; ++i) {
    longer -= bins_[static_cast<size_t>(i)];
    if (static_cast<double>(longer) <= fraction * n) {
      return kBin * (i + 1);  // the end of bin i
    }
  }
  return kBin * kBins;
}

absl::Duration IdleHistogram::MeanClipped(absl::Duration k) const {
  const int n = total_ + oob_;
  if (n == 0 || k <= absl::ZeroDuration()) {
    return absl::ZeroDuration();
  }
  const double k_s = absl::ToDoubleSeconds(k);
  const double bin_s = absl::ToDoubleSeconds(kBin);
  double sum_s = oob_ * k_s;
  for (int i = 0; i < kBins; ++i) {
    const double mid_s = (i + 0.5) * bin_s;
    sum_s += bins_[static_cast<size_t>(i)] * std::min(mid_s, k_s);
  }
  return absl::Seconds(sum_s / n);
}

IdleHistogram::Windows IdleHistogram::Compute() const {
  Windows w;
  const int n = total_ + oob_;
  const absl::Duration range = kBin * kBins;
  if (n < kMinSamples) {
    w.basis = Basis::kTooFewSamples;
    w.warm_until = range;
    return w;
  }
  if (oob_ >= kOobThreshold * n) {
    w.basis = Basis::kOutOfRange;
    w.prewarm = absl::Seconds(oob_ewma_s_ * (1 - kOobMargin));
    w.warm_until = absl::Seconds(oob_ewma_s_ * (1 + kOobMargin));
    return w;
  }
  // Coefficient of variation of the bin counts.
  const double mean = static_cast<double>(total_) / kBins;
  double var = 0;
  for (uint16_t b : bins_) {
    var += (b - mean) * (b - mean);
  }
  const double cv = std::sqrt(var / kBins) / mean;
  if (cv < kCvThreshold) {
    w.basis = Basis::kNotRepresentative;
    w.warm_until = range;
    return w;
  }
  // Percentiles over in-range gaps.
  const double head_rank = kHead * total_;
  const double tail_rank = kTail * total_;
  int head = -1;
  int tail = kBins - 1;
  int seen = 0;
  for (int i = 0; i < kBins; ++i) {
    seen += bins_[static_cast<size_t>(i)];
    if (head < 0 && seen > head_rank) {
      head = i;
    }
    if (seen >= tail_rank) {
      tail = i;
      break;
    }
  }
  w.basis = Basis::kHistogram;
  w.prewarm = kBin * (std::max(head, 0) * (1 - kMargin));
  w.warm_until = kBin * ((tail + 1) * (1 + kMargin));
  return w;
}

}  // namespace pilotlight::policy
