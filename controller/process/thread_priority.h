// RunWhenIdle: the calling thread runs only on CPU time nothing else in the
// process (or on the node) wants -- Linux's SCHED_IDLE, or nice 19 where
// that is refused -- so background work on its own thread (the
// counterfactual replays) never delays the tick's. Lowering a thread's
// priority needs no privilege. Returns what it set, for the log.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>

namespace pilotlight::process {

inline std::string RunWhenIdle() {
  sched_param none{};
  if (::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) == 0) {
    return "SCHED_IDLE";
  }
  // Linux applies a thread id's nice to that thread alone.
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19) == 0) {
    return "nice 19";
  }
  return "";
}

}  // namespace pilotlight::process
