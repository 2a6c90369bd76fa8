// GpuClass: one GPU tier on one node pool -- the hardware figures the sizing
// model needs, its prices and the node labels that select it. A plain value
// type; catalogs (catalog.h) hold many.
#pragma once

#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "controller/model/precision.h"

namespace pilotlight::model {

enum class InterconnectKind { kPcie, kNvlink, kInfinityFabric };

absl::string_view InterconnectName(InterconnectKind kind);

struct GpuClass {
  std::string name;       // catalog key, e.g. "h100-80gb-sxm"
  std::string gpu_model;  // e.g. "H100-80GB-SXM"
  std::string vendor;     // "NVIDIA", "AMD"

  double memory_gib = 0;      // device memory as the driver reports it
  double bandwidth_gbps = 0;  // peak memory bandwidth, 1e9 bytes/s
  double fp16_tflops = 0;     // dense 16-bit tensor throughput
  bool bf16 = true;           // bf16 runs at the fp16 rate when true
  double fp8_tflops = 0;      // dense; 0 = no FP8 tensor cores
  double int8_tops = 0;       // dense; 0 = no INT8 tensor cores
  double fp4_tflops = 0;      // dense; 0 = no FP4 tensor cores

  InterconnectKind interconnect = InterconnectKind::kPcie;
  double interconnect_gbps = 0;  // GPU-to-GPU, per GPU, per direction
  double host_link_gbps = 0;     // PCIe host link, per direction
  // The node's memory over its GPUs: what engines asleep on one of its GPUs
  // can keep their weights in (0 = not known: no engine sleeps there).
  double host_memory_gib_per_gpu = 0;
  int max_gpus_per_node = 1;  // bounds the tensor-parallel degree

  double price_on_demand_per_gpu_hour = 0;
  double price_spot_per_gpu_hour = 0;  // 0 = no spot market

  std::map<std::string, std::string> node_labels;
  // Whose instance types, labels and prices these are (aws, gcp, azure,
  // lambda; "" when not said).
  std::string cloud;
  std::string source;  // where the figures come from

  // Whether weights of precision `p` can run here: bf16 needs bf16 support,
  // fp8/int8/fp4 need the matching tensor cores; fp16 and int4 run anywhere.
  bool SupportsWeights(Precision p) const;

  // Dense tensor throughput used for weights of precision `p`, in TFLOPS
  // (TOPS for int8). int4 is weight-only, so it computes at the 16-bit rate.
  // 0 when unsupported.
  double ComputeTflops(Precision p) const;
};

}  // namespace pilotlight::model
