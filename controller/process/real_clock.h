// RealClock: the system clock, for the Kubernetes machinery (kube::Clock).
// With runtime/, activator/ (and its http/ transport) and cmd/, process/ is
// where the clock may be read (scripts/test checks).
#pragma once

#include <thread>

#include "absl/time/clock.h"
#include "controller/kube/clock.h"

namespace pilotlight::process {

class RealClock final : public kube::Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration d) const override {
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(d));
  }
};

}  // namespace pilotlight::process
