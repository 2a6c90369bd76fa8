// TimeBuckets: a bounded, bucketed window over timestamped values, in the
// manner of Knative's TimedFloat64Buckets. Values recorded in the same
// bucket are averaged; a window average is the mean over the buckets that
// hold data (a bucket without a sample is missing, not zero). Old buckets
// are reused in place, so memory is fixed: buckets x 16 bytes.
//
// Example:
//   TimeBuckets w(absl::Seconds(60), absl::Seconds(1));
//   w.Record(t, 12.0);
//   std::optional<double> stable = w.Average(now, absl::Seconds(60));
//   std::optional<double> panic = w.Average(now, absl::Seconds(6));
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/time/time.h"

namespace pilotlight::policy {

// floor(d / unit) for unit > 0 (absl's Duration division truncates toward
// zero; times before an epoch need the floor).
inline int64_t FloorDiv(absl::Duration d, absl::Duration unit) {
  const int64_t q = d / unit;
  return (d < q * unit) ? q - 1 : q;
}

class TimeBuckets {
 public:
  // `window` / `granularity` buckets (at least 1).
  TimeBuckets(absl::Duration window, absl::Duration granularity);

  void Record(absl::Time t, double value);

  // Mean over the buckets in (now - window, now] that hold data; nullopt
  // when none does. `window` is capped at the capacity.
  std::optional<double> Average(absl::Time now, absl::Duration window) const;
  // Largest bucket mean in the window; nullopt when empty.
  std::optional<double> Max(absl::Time now, absl::Duration window) const;
  // Least-squares line over the window's buckets: the slope (value per
  // second) and how well a line explains the data (R^2 in [0, 1]).
  struct Fit {
    double slope = 0;
    double r2 = 0;
    int buckets = 0;
  };
  // nullopt with fewer than 3 buckets of data.
  std::optional<Fit> Slope(absl::Time now, absl::Duration window) const;

  absl::Duration window() const { return granularity_ * size(); }
  size_t HeapBytes() const { return buckets_.capacity() * sizeof(Bucket); }
  absl::Duration granularity() const { return granularity_; }

 private:
  struct Bucket {
    int64_t index = -1;  // absolute bucket number; -1 = empty
    float sum = 0;
    uint32_t count = 0;
  };

  int64_t IndexOf(absl::Time t) const;
  int64_t size() const { return static_cast<int64_t>(buckets_.size()); }
  // Calls f(index, mean) for each bucket with data in the window.
  template <typename F>
  void ForEach(absl::Time now, absl::Duration window, F f) const;

  absl::Duration granularity_;
  std::vector<Bucket> buckets_;
};

}  // namespace pilotlight::policy

namespace pilotlight::policy {

// WindowedMax: the largest value recorded in the last `window`, bucketed by
// `granularity` (each bucket keeps its maximum). Fixed memory: 8 bytes a
// bucket -- its number relative to the first one recorded, and the maximum
// as a float (exact for the replica counts it holds; other values within
// float precision).
class WindowedMax {
 public:
  WindowedMax(absl::Duration window, absl::Duration granularity);
  void Record(absl::Time t, double value);
  // Largest value in (now - window, now]; nullopt when none.
  std::optional<double> Max(absl::Time now, absl::Duration window) const;
  size_t HeapBytes() const { return buckets_.capacity() * sizeof(Bucket); }

 private:
  static constexpr int32_t kEmpty = std::numeric_limits<int32_t>::min();
  struct Bucket {
    int32_t index = kEmpty;  // relative to base_
    float max = 0;
  };
  int64_t IndexOf(absl::Time t) const;
  // `index` relative to base_, clamped into int32 (kEmpty excluded).
  int32_t Relative(int64_t index) const;
  absl::Duration granularity_;
  int64_t base_ = 0;
  bool based_ = false;
  std::vector<Bucket> buckets_;
};

}  // namespace pilotlight::policy
