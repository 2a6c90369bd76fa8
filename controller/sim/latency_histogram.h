#pragma once

#include <array>
#include <cstdint>

namespace pilotlight::sim {

// Latency histogram: log-spaced buckets from 1 ms to ~3 h (percentiles to
// within 1 %), plus exact zero; fixed memory whatever the request count.
class LatencyHistogram {
 public:
  void Add(double seconds);
  double Quantile(double q) const;
  int64_t count() const { return count_; }
  void Merge(const LatencyHistogram& o);

 private:
  static constexpr int kBuckets = 1600;
  std::array<int64_t, kBuckets + 1> counts_{};  // [0] = below 1 ms
  int64_t count_ = 0;
};

}  // namespace pilotlight::sim
