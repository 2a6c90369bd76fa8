// ThreadCpuSeconds: the CPU time of the calling thread (a worker's
// reconciles without the informers' and the HTTP server's; a replay on its
// own thread), to the nanosecond: getrusage's per-thread counts move in
// scheduler ticks, too coarse for a reconcile pass. With real_clock.h, one
// of the clock reads process/ holds.
#pragma once

#include <time.h>

namespace pilotlight::process {

inline double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace pilotlight::process
