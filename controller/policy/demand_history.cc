#include "controller/policy/demand_history.h"

#include <algorithm>
#include <vector>

namespace pilotlight::policy {

// --- RiseTracker -------------------------------------------------------------

void RiseTracker::Record(absl::Time t, double concurrency, absl::Duration lead,
                         absl::Time censored_until) {
  levels_.Record(t, concurrency);
  const int64_t slot = FloorDiv(t - absl::UnixEpoch(), kGranularity);
  if (slot == last_slot_) {
    return;
  }
  last_slot_ = slot;
  const absl::Duration back =
      std::clamp(lead, kGranularity, kHorizon - kGranularity);
  const std::optional<double> before = levels_.Average(t - back, kGranularity);
  if (!before) {
    return;  // no level one lead ago (just became active)
  }
  if (t - back - kGranularity <= censored_until) {
    return;  // the level it would rise from was censored
  }
  rises_[static_cast<size_t>(next_)] =
      static_cast<float>(std::max(0.0, concurrency - *before));
  next_ = (next_ + 1) % kRises;
  count_ = std::min(count_ + 1, kRises);
}

std::optional<double> RiseTracker::Quantile(double q) const {
  if (count_ < 8) {
    return std::nullopt;
  }
  std::array<float, kRises> copy = rises_;
  const auto n = static_cast<size_t>(count_);
  const auto k = std::min(n - 1, static_cast<size_t>(std::clamp(q, 0.0, 1.0) *
                                                     static_cast<double>(n)));
  std::nth_element(copy.begin(), copy.begin() + static_cast<long>(k),
                   copy.begin() + static_cast<long>(n));
  return copy[k];
}

double RiseTracker::FractionAbove(double x) const {
  if (count_ == 0) {
    return 0;
  }
  int above = 0;
  for (int i = 0; i < count_; ++i) {
    if (static_cast<double>(rises_[static_cast<size_t>(i)]) > x) {
      ++above;
    }
  }
  return static_cast<double>(above) / count_;
}

// --- SeasonalProfile ---------------------------------------------------------

int SeasonalProfile::BinOf(absl::Time t) {
  const int64_t idx = FloorDiv(t - absl::UnixEpoch(), kBin);
  return static_cast<int>(((idx % kBins) + kBins) % kBins);
}

void SeasonalProfile::Fold() {
  if (open_bin_ < 0 || open_count_ == 0) {
    return;
  }
  const auto b = static_cast<size_t>(open_bin_ % kBins);
  const auto mean = static_cast<float>(open_sum_ / open_count_);
  level_[b] = seen_[b] ? 0.5F * level_[b] + 0.5F * mean : mean;
  seen_[b] = true;
}

void SeasonalProfile::Record(absl::Time t, double concurrency) {
  if (!first_) {
    first_ = t;
  }
  const int64_t idx = FloorDiv(t - absl::UnixEpoch(), kBin);
  if (idx != open_bin_) {
    Fold();
    open_bin_ = idx;
    open_sum_ = 0;
    open_count_ = 0;
  }
  open_sum_ += concurrency;
  ++open_count_;
}

std::optional<double> SeasonalProfile::Ratio(absl::Time now,
                                             absl::Duration lead) const {
  if (!first_ || now - *first_ < absl::Hours(24)) {
    return std::nullopt;
  }
  const auto a = static_cast<size_t>(BinOf(now));
  const auto b = static_cast<size_t>(BinOf(now + lead));
  if (!seen_[a] || !seen_[b] || level_[a] < 0.5F) {
    return std::nullopt;
  }
  return static_cast<double>(level_[b]) / static_cast<double>(level_[a]);
}

}  // namespace pilotlight::policy
