// Clock: the time source the Kubernetes machinery (throttling, back-off,
// leases, delayed work) runs on. controller/runtime owns the real one (the
// only code that reads the system clock); tests pass a fake they advance.
#pragma once

#include "absl/time/time.h"

namespace pilotlight::kube {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Blocks for `d` of this clock's time.
  virtual void SleepFor(absl::Duration d) const = 0;
};

}  // namespace pilotlight::kube
