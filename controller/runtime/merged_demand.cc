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
  // The activators' forwarded requests are all at pods: the engines see
  // them as running or waiting once scraped. Those not seen yet (the
  // scrape lags a burst, or has not reached new pods at all) run: the
  // activator forwards no more to a pod than its concurrency. They used
  // to count as waiting, which the policy discounts as a backlog a
  // replica asked for now would not serve (by service time / cold-start
  // lead, ~0.1 with a node to start) -- so 38 requests running on 4 new
  // pods read as ~3.
  const double waiting = s.queued.value_or(0);
  const double running =
      std::max(s.in_flight.value_or(0), a.in_flight - waiting);
  if (s.in_flight || a.in_flight > 0) {
    s.in_flight = running;
  }
  if (s.queued || a.held > 0) {
    s.queued = waiting + a.held;
  }
  if (s.arrivals || a.arrivals > 0) {
    s.arrivals = std::max(s.arrivals.value_or(0), a.arrivals);
  }
  return s;
}

}  // namespace pilotlight::runtime
