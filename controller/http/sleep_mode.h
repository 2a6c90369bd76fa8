// An engine's sleep mode over HTTP, as vLLM serves it (--enable-sleep-mode:
// GET /is_sleeping, POST /sleep?level=1, POST /wake_up): what both the
// activator (waking engines for requests, activator/waker.h) and the
// controller (putting idle ones to sleep, runtime/pool_engines.h) read.
#pragma once

#include <optional>

#include "absl/time/time.h"
#include "httplib.h"

namespace pilotlight::http {

// Connect, read and write timeouts of `d` (at least a millisecond).
void SetClientTimeouts(httplib::Client& c, absl::Duration d);

// GET /is_sleeping: true asleep (or waking), false awake; unset when the
// engine has no sleep mode (404), does not answer, or answers nonsense.
std::optional<bool> IsSleeping(httplib::Client& c);

}  // namespace pilotlight::http
