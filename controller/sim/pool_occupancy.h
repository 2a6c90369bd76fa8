// The sleep pool's occupancy over a replay (SimConfig::sleep): how many
// engines are asleep in it and how many woken ones are awake on its GPUs,
// across a trace's endpoints, and the pool GPUs that holds.
//
// Each endpoint is replayed on its own, so the replay itself never runs
// out of pool; this says what pool it used. A pool GPU holds
// `engines_per_gpu` engines (model::EstimateSleep: the node's memory over
// its GPUs, and the GPU memory the awake engine leaves) and serves one
// awake at a time, so at each moment the pool needs
//
//   GPUs = max(ceil((asleep + awake) / engines_per_gpu), awake) x gpus per
//   engine
//
// (engines placed anywhere; a pool of fixed pods places them once, and
// needs more). Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "controller/policy/pool_sizer.h"

namespace pilotlight::sim {

// A change at `t` (seconds from the trace's start) of the engines asleep
// and of the woken engines awake, by +-1.
struct PoolChange {
  double t = 0;
  int8_t asleep = 0;
  int8_t awake = 0;
};

struct PoolOccupancy {
  int peak_asleep = 0;   // engines asleep at once
  int peak_awake = 0;    // woken engines awake at once
  int peak_gpus = 0;     // the GPUs holding them at the busiest moment
  double gpu_hours = 0;  // GPUs x time over [from_s, to_s]
  // At the pool's price (the caller's): those GPU-hours (a pool that grows
  // and shrinks with its engines), and peak_gpus all along (a fixed one).
  double cost_usd = 0;
  double fixed_cost_usd = 0;
};

// The occupancy over [from_s, to_s] of the pool the changes describe (in
// any order; changes at one moment count together).
PoolOccupancy Occupancy(std::vector<PoolChange> changes, int engines_per_gpu,
                        int gpus_per_engine, double from_s, double to_s);

// The same replay's pool sized by the controller's rule (policy::PoolSizer,
// as a live pool is): every `tick_s` it asks for the pods the GPUs above
// need -- the woken engines awake as busy pods, the engines asleep and
// awake in memory -- plus the spare, held for the window; a pod asked for
// is Ready `pod_start_s` later, and one released goes at once (one not
// Ready first). The pool starts with the least it keeps, Ready.
struct SizedPool {
  int peak_pods = 0;     // pods at once, Ready or starting
  double gpu_hours = 0;  // pods x GPUs an engine takes x time
  double cost_usd = 0;   // at the caller's price
  // Wakes that found every Ready pod's GPU taken by an engine awake (live,
  // the activator then puts an idle one to sleep first, or the wake waits
  // for a pod), and the engine-seconds awake beyond the Ready pods.
  int64_t wakes_without_a_free_pod = 0;
  double engine_seconds_short = 0;
};

SizedPool Sized(std::vector<PoolChange> changes, int engines_per_gpu,
                int gpus_per_engine, const policy::PoolSizerConfig& config,
                double pod_start_s, double tick_s, double from_s, double to_s);

}  // namespace pilotlight::sim
