#include "controller/sim/pool_occupancy.h"

#include <algorithm>

namespace pilotlight::sim {

PoolOccupancy Occupancy(std::vector<PoolChange> changes, int engines_per_gpu,
                        int gpus_per_engine, double from_s, double to_s) {
  PoolOccupancy o;
  if (engines_per_gpu <= 0) {
    return o;
  }
  std::stable_sort(
      changes.begin(), changes.end(),
      [](const PoolChange& a, const PoolChange& b) { return a.t < b.t; });
  const auto gpus = [&](int asleep, int awake) {
    const int held = (asleep + awake + engines_per_gpu - 1) / engines_per_gpu;
    return std::max(held, awake) * gpus_per_engine;
  };
  int asleep = 0;
  int awake = 0;
  double since = from_s;  // (asleep, awake) since then
  // The state since `since`, until `until`, as far as it lies in the window.
  const auto account = [&](double until) {
    const double a = std::max(since, from_s);
    const double b = std::min(until, to_s);
    if (b > a) {
      o.gpu_hours += gpus(asleep, awake) * (b - a) / 3600;
      o.peak_asleep = std::max(o.peak_asleep, asleep);
      o.peak_awake = std::max(o.peak_awake, awake);
      o.peak_gpus = std::max(o.peak_gpus, gpus(asleep, awake));
    }
  };
  for (size_t i = 0; i < changes.size();) {
    const double t = changes[i].t;
    account(t);
    since = t;
    for (; i < changes.size() && changes[i].t == t; ++i) {
      asleep += changes[i].asleep;
      awake += changes[i].awake;
    }
  }
  account(to_s);
  return o;
}

}  // namespace pilotlight::sim
