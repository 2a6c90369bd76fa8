// CeilDiv: how many units of `per` hold `demand` (replicas for a load,
// slots for requests). Zero demand or no capacity needs none; a demand a
// hair over a whole number (floating-point noise) does not round up.
#pragma once

#include <cmath>

namespace pilotlight {

inline int CeilDiv(double demand, double per) {
  constexpr double kEps = 1e-9;
  if (demand <= kEps || per <= 0) {
    return 0;
  }
  return static_cast<int>(std::ceil(demand / per - kEps));
}

}  // namespace pilotlight
