#include "controller/policy/leaving_replicas.h"

#include <cstddef>
#include <numeric>

namespace pilotlight::policy {

std::vector<int32_t> ReplicasWithLeaving(const std::vector<int32_t>& decided,
                                         const std::vector<int32_t>& ready,
                                         const std::vector<int32_t>& leaving,
                                         int32_t need) {
  const int64_t ready_total =
      std::accumulate(ready.begin(), ready.end(), int64_t{0});
  std::vector<int32_t> out = decided;
  for (std::size_t i = 0;
       i < out.size() && i < leaving.size() && i < ready.size(); ++i) {
    if (ready[i] < decided[i] || ready_total < need) {
      out[i] += leaving[i];
    }
  }
  return out;
}

}  // namespace pilotlight::policy
