#include "controller/runtime/merged_demand.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pilotlight::runtime {

int64_t MergedDemand::Epoch(const std::string& endpoint) const {
  // Both move forward only, so their sum moves whenever either does.
  return prom_.Epoch(endpoint) + activators_.Epoch(endpoint);
}

policy::DemandSample MergedDemand::Read(
    const api::AutoscalerResource& endpoint,
    const std::vector<std::string>& ready_pods, absl::Time now,
    std::string& missing) {
  policy::DemandSample s = prom_.Read(endpoint, ready_pods, now, missing);
  const ActivatorRead a = activators_.Read(endpoint.spec.name);
  if (!a.lost.empty()) {
    // What is seen is a lower bound: the policy scales up for it (a
    // request held at zero while another activator reconnects is served)
    // but never down.
    absl::StrAppend(&missing, a.lost);
    s.partial = true;
  }
  const double running = s.in_flight.value_or(0);
  const double unseen = std::max(0.0, a.in_flight - running);
  if (s.queued || a.held > 0 || unseen > 0) {
    s.queued = s.queued.value_or(0) + unseen + a.held;
  }
  if (s.arrivals || a.arrivals > 0) {
    s.arrivals = std::max(s.arrivals.value_or(0), a.arrivals);
  }
  return s;
}

}  // namespace pilotlight::runtime
