#include "controller/model/sleep.h"

#include <algorithm>
#include <cmath>

#include "controller/model/sizing.h"

namespace pilotlight::model {

SleepEstimate EstimateSleep(double weight_bytes_per_gpu, int tensor_parallel,
                            const GpuClass& gpu, const SleepAssumptions& a) {
  SleepEstimate e;
  const double copy_gbps = gpu.host_link_gbps * a.pinned_copy_efficiency;
  e.wake = a.resume;
  if (copy_gbps > 0) {
    e.wake += absl::Seconds(weight_bytes_per_gpu / (copy_gbps * 1e9));
  }
  if (!(weight_bytes_per_gpu > 0) || !(a.asleep_gpu_gib > 0)) {
    return e;
  }
  // Whole engines, not lost to rounding (10 GiB x 0.1 / 0.5 is 2).
  const auto whole = [](double x) { return std::floor(x + 1e-9); };
  const double host_bytes =
      gpu.host_memory_gib_per_gpu * kGiB * (1 - a.host_reserved_share);
  const double by_host = whole(host_bytes / weight_bytes_per_gpu);
  const double by_gpu =
      whole(gpu.memory_gib * (1 - a.awake_gpu_share) / a.asleep_gpu_gib);
  e.engines_per_gpu =
      static_cast<int>(std::max(0.0, std::min(by_host, by_gpu)));
  if (e.engines_per_gpu > 0) {
    e.asleep_price_per_hour =
        tensor_parallel * gpu.price_on_demand_per_gpu_hour / e.engines_per_gpu;
  }
  return e;
}

}  // namespace pilotlight::model
