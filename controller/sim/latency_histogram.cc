#include "controller/sim/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace pilotlight::sim {

namespace {
constexpr double kMinLatency = 1e-3;
constexpr double kGrowth = 1.01;  // bucket i covers [1ms x 1.01^(i-1), x1.01)
}  // namespace

void LatencyHistogram::Add(double seconds) {
  ++count_;
  if (!(seconds >= kMinLatency)) {
    ++counts_[0];
    return;
  }
  const int b =
      1 + static_cast<int>(std::log(seconds / kMinLatency) / std::log(kGrowth));
  ++counts_[static_cast<size_t>(std::min(b, kBuckets))];
}

double LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) {
    return 0;
  }
  const auto rank =
      static_cast<int64_t>(std::ceil(q * static_cast<double>(count_)));
  int64_t seen = 0;
  for (int i = 0; i <= kBuckets; ++i) {
    seen += counts_[static_cast<size_t>(i)];
    if (seen >= std::max<int64_t>(rank, 1)) {
      if (i == 0) {
        return 0;
      }
      // Upper edge of the bucket: never reports a latency as better.
      return kMinLatency * std::pow(kGrowth, i);
    }
  }
  return kMinLatency * std::pow(kGrowth, kBuckets);
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  for (size_t i = 0; i < counts_.size(); ++i) {
    counts_[i] += o.counts_[i];
  }
  count_ += o.count_;
}

}  // namespace pilotlight::sim
