// Throttle: client-side rate limiting of API requests (a token bucket of
// `qps` tokens per second holding at most `burst`), shared by every client
// of one controller, so a large cluster is not hammered: client-go's
// QPS/Burst. Thread-safe.
#pragma once

#include <mutex>

#include "absl/time/time.h"
#include "controller/kube/clock.h"

namespace pilotlight::kube {

class Throttle {
 public:
  Throttle(double qps, int burst, const Clock& clock);

  // Takes a token, sleeping until one is there. Returns the time waited.
  absl::Duration Wait();

  // Without sleeping: the wait a request arriving at `now` would have, and
  // takes its token (pure bookkeeping; Wait() sleeps for it).
  absl::Duration Reserve(absl::Time now);

 private:
  const double qps_;
  const double burst_;
  const Clock& clock_;
  std::mutex mu_;
  double tokens_;
  absl::Time last_;
};

}  // namespace pilotlight::kube
