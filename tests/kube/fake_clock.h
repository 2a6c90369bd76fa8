// A kube::Clock for tests: time moves only when told, and SleepFor moves
// it (so code that sleeps runs instantly and deterministically).
#pragma once

#include <mutex>

#include "controller/kube/clock.h"

namespace pilotlight::kube {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'800'000'000))
      : now_(start) {}
  absl::Time Now() const override {
    const std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void SleepFor(absl::Duration d) const override { Advance(d); }
  void Advance(absl::Duration d) const {
    const std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  mutable absl::Time now_;
};

}  // namespace pilotlight::kube
