// The sleep model: what an engine asleep in host memory costs, and how
// fast it wakes. Pure arithmetic, beside the cold-start model.
//
// An engine that supports sleep (vLLM's sleep mode, level 1) moves its
// weights to the node's (pinned) host memory and frees its GPU memory
// without stopping the server; waking copies them back:
//
//   T_wake = weight bytes per GPU / (host link x pinned-copy efficiency)
//          + T_resume (the KV cache re-allocated; CUDA graphs and compiled
//            kernels survive the sleep, so no engine start is paid again)
//
// Several sleeping engines share one pool GPU: each keeps its weights in
// the node's memory (the node's memory over its GPUs, less a share kept for
// the system and the engine processes) and a CUDA context on the GPU, in
// the memory the awake engine leaves free (vLLM's gpu-memory-utilization).
// An engine asleep costs its share of the pool GPU's hour: the GPU's price
// over the engines it holds, per GPU of the replica.
//
// The defaults are published figures: vLLM's sleep-mode benchmarks wake a
// 0.6B model in ~0.1 s and the largest (235B, tensor-parallel) in ~6 s; a
// pinned host-to-device copy runs at ~80 % of the PCIe link.
//
// Example:
//   SleepEstimate s = EstimateSleep(weights_per_gpu, tp, gpu, {});
//   if (s.engines_per_gpu > 0) ... s.wake, s.asleep_price_per_hour ...
#pragma once

#include "absl/time/time.h"
#include "controller/model/gpu_class.h"

namespace pilotlight::model {

struct SleepAssumptions {
  double pinned_copy_efficiency = 0.8;  // of the host link, per direction
  absl::Duration resume = absl::Milliseconds(500);
  double host_reserved_share = 0.2;  // of the node's memory: OS, processes
  double asleep_gpu_gib = 0.5;       // a sleeping engine's CUDA context
  double awake_gpu_share = 0.9;      // the awake engine's share of the GPU
};

struct SleepEstimate {
  absl::Duration wake;  // asleep -> serving
  // Engines of this shape one pool GPU holds asleep (0: the node's memory
  // cannot hold its weights, or is not known).
  int engines_per_gpu = 0;
  // Per replica (its tensor-parallel GPUs): the pool GPUs' price over the
  // engines each holds; 0 where none fits.
  double asleep_price_per_hour = 0;
};

// `weight_bytes_per_gpu` is what each GPU of the replica holds (the tensor-
// parallel ranks wake in parallel).
SleepEstimate EstimateSleep(double weight_bytes_per_gpu, int tensor_parallel,
                            const GpuClass& gpu, const SleepAssumptions& a);

}  // namespace pilotlight::model
