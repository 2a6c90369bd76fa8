// The cold-start model: how long a new replica takes from "asked for" to
// "ready to serve", before the controller has measured any. Pure arithmetic;
// the controller replaces these estimates with what it measures from pod
// condition timestamps (policy/ uses the learned p90 once it has samples).
//
//   T_cold = T_node   (0 when a node of the pool is free; else provisioning)
//          + T_pull   (0 when the image is cached; else image bytes / pull BW)
//          + T_weights (weight bytes per GPU / min(storage BW, host link BW))
//          + T_init   (engine start-up: imports, CUDA context, graph capture)
//
// The defaults are published figures: a naive safetensors load runs at
// about 3 GB/s (ServerlessLLM, OSDI'24: Llama-3.1-8B's 16 GB in 4.4 s), vLLM
// engine init (torch.compile cache + CUDA graphs) takes 20-40 s, and a new
// cloud VM takes minutes.
//
// Example:
//   ColdStartEstimate e = EstimateColdStart(weights_per_gpu, gpu, {});
//   absl::Duration lead = e.total();
#pragma once

#include "absl/time/time.h"
#include "controller/model/gpu_class.h"

namespace pilotlight::model {

struct ColdStartAssumptions {
  bool node_free = true;  // a node with a free GPU is already in the pool
  absl::Duration node_provisioning = absl::Seconds(120);
  bool image_cached = true;
  double image_gib = 8.0;     // vLLM CUDA image, compressed
  double pull_gbps = 0.2;     // registry pull + extract, 1e9 bytes/s
  double storage_gbps = 3.0;  // weight source -> host (safetensors, NVMe)
  absl::Duration engine_init = absl::Seconds(30);
};

struct ColdStartEstimate {
  absl::Duration node;
  absl::Duration pull;
  absl::Duration weights;
  absl::Duration init;
  absl::Duration total() const { return node + pull + weights + init; }
};

// `weight_bytes_per_gpu` is what each GPU of the replica loads (the tensor-
// parallel ranks load their shards in parallel).
ColdStartEstimate EstimateColdStart(double weight_bytes_per_gpu,
                                    const GpuClass& gpu,
                                    const ColdStartAssumptions& a);

}  // namespace pilotlight::model
