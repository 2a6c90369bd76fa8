#include "controller/model/cold_start.h"

#include <algorithm>

namespace pilotlight::model {

ColdStartEstimate EstimateColdStart(double weight_bytes_per_gpu,
                                    const GpuClass& gpu,
                                    const ColdStartAssumptions& a) {
  ColdStartEstimate e;
  e.node = a.node_free ? absl::ZeroDuration() : a.node_provisioning;
  if (!a.image_cached && a.pull_gbps > 0) {
    e.pull = absl::Seconds(a.image_gib * (1024.0 * 1024.0 * 1024.0) /
                           (a.pull_gbps * 1e9));
  }
  double load_gbps = a.storage_gbps;
  if (gpu.host_link_gbps > 0) {
    load_gbps = std::min(load_gbps, gpu.host_link_gbps);
  }
  if (load_gbps > 0) {
    e.weights = absl::Seconds(weight_bytes_per_gpu / (load_gbps * 1e9));
  }
  e.init = a.engine_init;
  return e;
}

}  // namespace pilotlight::model
