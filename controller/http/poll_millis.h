// A wait's time left as poll(2)'s timeout, for the front's and Forward's
// waits alike.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace pilotlight::http {

// `left` in milliseconds, rounded up (a wait never ends just short of its
// deadline), 0 when it is past, at most 2^30.
inline int PollMillis(absl::Duration left) {
  return static_cast<int>(std::clamp<int64_t>(
      absl::ToInt64Milliseconds(left + absl::Microseconds(999)), 0, 1 << 30));
}

}  // namespace pilotlight::http
