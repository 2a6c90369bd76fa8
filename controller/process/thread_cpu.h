// ThreadCpuSeconds: the CPU time of the calling thread (a worker's
// reconciles without the informers' and the HTTP server's; a replay on its
// own thread). With real_clock.h, one of the clock reads process/ holds.
#pragma once

#include <sys/resource.h>

namespace pilotlight::process {

inline double ThreadCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace pilotlight::process
