#include "controller/sim/pool_occupancy.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "absl/time/time.h"
#include "controller/base/ceil_div.h"

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
    return std::max(CeilDiv(asleep + awake, engines_per_gpu), awake) *
           gpus_per_engine;
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

SizedPool Sized(std::vector<PoolChange> changes, int engines_per_gpu,
                int gpus_per_engine, const policy::PoolSizerConfig& config,
                double pod_start_s, double tick_s, double from_s, double to_s) {
  SizedPool out;
  if (engines_per_gpu <= 0 || tick_s <= 0 || to_s <= from_s) {
    return out;
  }
  std::stable_sort(
      changes.begin(), changes.end(),
      [](const PoolChange& a, const PoolChange& b) { return a.t < b.t; });
  policy::PoolSizer sizer(config);
  // The pods' Ready times, in the order asked for.
  std::deque<double> pods(static_cast<size_t>(std::max(1, config.min_pods)),
                          -std::numeric_limits<double>::infinity());
  const auto ready = [&](double t) {
    return static_cast<int>(std::count_if(pods.begin(), pods.end(),
                                          [t](double at) { return at <= t; }));
  };
  int asleep = 0;
  int awake = 0;
  // Time runs over the changes and the ticks together; between two
  // moments the state holds, and is billed as far as it lies in the window.
  const double start =
      changes.empty() ? from_s : std::min(from_s, changes.front().t);
  double t = start;
  double next_tick = start;
  size_t i = 0;
  const auto bill = [&](double until) {
    const double a = std::max(t, from_s);
    const double b = std::min(until, to_s);
    if (b > a) {
      out.gpu_hours +=
          static_cast<double>(pods.size()) * gpus_per_engine * (b - a) / 3600;
      // Pods turn Ready inside (a, b) too: count the shortfall by the
      // piece before and after each (in order: asked for in time order,
      // each a pod's start later).
      double from = a;
      for (double at : pods) {
        if (at > a && at < b) {
          out.engine_seconds_short +=
              std::max(0, awake - ready(from)) * (at - from);
          from = at;
        }
      }
      out.engine_seconds_short += std::max(0, awake - ready(from)) * (b - from);
    }
  };
  while (t < to_s) {
    const double next_change = i < changes.size()
                                   ? changes[i].t
                                   : std::numeric_limits<double>::infinity();
    const double next = std::min(next_tick, next_change);
    bill(next);
    t = next;
    if (next == next_change) {
      for (; i < changes.size() && changes[i].t == t; ++i) {
        asleep += changes[i].asleep;
        awake += changes[i].awake;
        if (changes[i].awake > 0 && awake > ready(t) && t >= from_s &&
            t < to_s) {
          ++out.wakes_without_a_free_pod;
        }
      }
      continue;  // a tick at the same moment comes next
    }
    const int holding = CeilDiv(asleep + awake, engines_per_gpu);
    const int want =
        sizer.Size(absl::UnixEpoch() + absl::Seconds(t), {awake, holding}).pods;
    while (static_cast<int>(pods.size()) < want) {
      pods.push_back(t + pod_start_s);
    }
    while (static_cast<int>(pods.size()) > want) {
      // One not Ready goes first: the latest asked for.
      pods.pop_back();
    }
    if (t >= from_s) {
      out.peak_pods = std::max(out.peak_pods, static_cast<int>(pods.size()));
    }
    next_tick = t + tick_s;
  }
  return out;
}

}  // namespace pilotlight::sim
