#include "controller/policy/time_window.h"

#include <algorithm>
#include <cmath>

namespace pilotlight::policy {
namespace {

// The ring both windows use: `window / granularity` slots (at least one),
// bucket number = floor(t / granularity), slot = bucket mod slots.
absl::Duration ValidGranularity(absl::Duration g) {
  return g > absl::ZeroDuration() ? g : absl::Seconds(1);
}

size_t SlotCount(absl::Duration window, absl::Duration granularity) {
  return static_cast<size_t>(std::max<int64_t>(1, window / granularity));
}

int64_t BucketIndex(absl::Time t, absl::Duration granularity) {
  return FloorDiv(t - absl::UnixEpoch(), granularity);
}

size_t Slot(int64_t index, size_t slots) {
  const auto n = static_cast<int64_t>(slots);
  return static_cast<size_t>(((index % n) + n) % n);
}

}  // namespace

TimeBuckets::TimeBuckets(absl::Duration window, absl::Duration granularity)
    : granularity_(ValidGranularity(granularity)) {
  buckets_.resize(SlotCount(window, granularity_));
}

int64_t TimeBuckets::IndexOf(absl::Time t) const {
  return BucketIndex(t, granularity_);
}

void TimeBuckets::Record(absl::Time t, double value) {
  const int64_t idx = IndexOf(t);
  Bucket& b = buckets_[Slot(idx, buckets_.size())];
  if (b.index > idx) {
    return;  // older than what the slot holds now: outside the window
  }
  if (b.index != idx) {
    b = Bucket{idx, 0, 0};
  }
  b.sum += static_cast<float>(value);
  ++b.count;
}

template <typename F>
void TimeBuckets::ForEach(absl::Time now, absl::Duration window, F f) const {
  const int64_t last = IndexOf(now);
  const int64_t n = std::clamp<int64_t>(window / granularity_, 1, size());
  const int64_t first = last - n + 1;
  for (const Bucket& b : buckets_) {
    if (b.count > 0 && b.index >= first && b.index <= last) {
      f(b.index, static_cast<double>(b.sum) / b.count);
    }
  }
}

std::optional<double> TimeBuckets::Average(absl::Time now,
                                           absl::Duration window) const {
  double sum = 0;
  int n = 0;
  ForEach(now, window, [&](int64_t, double mean) {
    sum += mean;
    ++n;
  });
  if (n == 0) {
    return std::nullopt;
  }
  return sum / n;
}

std::optional<double> TimeBuckets::Max(absl::Time now,
                                       absl::Duration window) const {
  std::optional<double> best;
  ForEach(now, window, [&](int64_t, double mean) {
    if (!best || mean > *best) {
      best = mean;
    }
  });
  return best;
}

std::optional<TimeBuckets::Fit> TimeBuckets::Slope(
    absl::Time now, absl::Duration window) const {
  // x in seconds relative to `now`'s bucket, to keep the sums small.
  const int64_t last = IndexOf(now);
  const double g = absl::ToDoubleSeconds(granularity_);
  double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
  int n = 0;
  ForEach(now, window, [&](int64_t idx, double mean) {
    const double x = static_cast<double>(idx - last) * g;
    sx += x;
    sy += mean;
    sxx += x * x;
    sxy += x * mean;
    syy += mean * mean;
    ++n;
  });
  if (n < 3) {
    return std::nullopt;
  }
  const double denom = n * sxx - sx * sx;
  if (std::abs(denom) < 1e-12) {
    return std::nullopt;
  }
  Fit fit;
  fit.buckets = n;
  fit.slope = (n * sxy - sx * sy) / denom;
  const double syy_c = n * syy - sy * sy;  // n^2 x variance of y
  const double sxy_c = n * sxy - sx * sy;
  fit.r2 = syy_c > 1e-12 ? (sxy_c * sxy_c) / (denom * syy_c) : 0.0;
  return fit;
}

// --- WindowedMax
// ---------------------------------------------------------------

WindowedMax::WindowedMax(absl::Duration window, absl::Duration granularity)
    : granularity_(ValidGranularity(granularity)) {
  buckets_.resize(SlotCount(window, granularity_));
}

int64_t WindowedMax::IndexOf(absl::Time t) const {
  return BucketIndex(t, granularity_);
}

int32_t WindowedMax::Relative(int64_t index) const {
  return static_cast<int32_t>(std::clamp<int64_t>(
      index - base_, int64_t{kEmpty} + 1, std::numeric_limits<int32_t>::max()));
}

void WindowedMax::Record(absl::Time t, double value) {
  const int64_t abs_idx = IndexOf(t);
  if (!based_) {
    base_ = abs_idx;
    based_ = true;
  }
  const int32_t idx = Relative(abs_idx);
  Bucket& b = buckets_[Slot(abs_idx, buckets_.size())];
  if (b.index != kEmpty && b.index > idx) {
    return;
  }
  if (b.index != idx) {
    b = Bucket{idx, static_cast<float>(value)};
    return;
  }
  b.max = std::max(b.max, static_cast<float>(value));
}

std::optional<double> WindowedMax::Max(absl::Time now,
                                       absl::Duration window) const {
  if (!based_) {
    return std::nullopt;
  }
  const int64_t last = IndexOf(now);
  const auto n = static_cast<int64_t>(buckets_.size());
  const int64_t first =
      last -
      std::clamp<int64_t>(absl::Ceil(window, granularity_) / granularity_, 1,
                          n) +
      1;
  const int32_t lo = Relative(first);
  const int32_t hi = Relative(last);
  std::optional<double> best;
  for (const Bucket& b : buckets_) {
    if (b.index != kEmpty && b.index >= lo && b.index <= hi &&
        (!best || static_cast<double>(b.max) > *best)) {
      best = static_cast<double>(b.max);
    }
  }
  return best;
}

}  // namespace pilotlight::policy
