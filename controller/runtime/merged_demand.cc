#include "controller/runtime/merged_demand.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pilotlight::runtime {

int64_t MergedDemand::Epoch(const std::string& endpoint) const {
  // Both move forward only, so their sum moves whenever either does.
  return prom_.Epoch(endpoint) + activators_.Epoch(endpoint);
}

void MergedDemand::Forget(const std::string& endpoint) {
  prom_.Forget(endpoint);
  const std::lock_guard<std::mutex> lock(mu_);
  latency_epoch_.erase(endpoint);
}

policy::DemandSample MergedDemand::Read(
    const api::AutoscalerResource& endpoint,
    const std::vector<std::string>& ready_pods, absl::Time now,
    std::string& missing) {
  policy::DemandSample s = prom_.Read(endpoint, ready_pods, now, missing);
  if (s.latency) {
    const int64_t epoch = prom_.Epoch(endpoint.spec.name);
    const std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = latency_epoch_.try_emplace(endpoint.spec.name, epoch);
    if (!fresh && it->second == epoch) {
      s.latency.reset();  // this window was handed on already
    }
    it->second = epoch;
  }
  const ActivatorRead a = activators_.Read(endpoint.spec.name);
  if (!a.lost.empty()) {
    // What is seen is a lower bound: the policy scales up for it (a
    // request held at zero while another activator reconnects is served)
    // but never down.
    absl::StrAppend(&missing, a.lost);
    s.partial = true;
  }
  // Forwarded requests the engines have not reported: while the engines'
  // running is read, those beyond it count as waiting (the scrape lags;
  // the activator's count is fresher, and taking the larger of the two
  // as running overcounts on a falling edge: a 3-minute replay read 8 in
  // flight where 5 were). When it is missing altogether -- new pods not
  // scraped yet -- they run: the activator forwards a pod no more than its
  // concurrency, and as "waiting" the policy discounted them as a backlog
  // (by service time / lead, ~0.08 with a node to start): 38 requests on
  // 4 new pods read as ~3 on the Mooncake replay.
  const double waiting = s.queued.value_or(0);
  if (!s.in_flight && a.in_flight > 0) {
    s.in_flight = std::max(0.0, a.in_flight - waiting);
  }
  const double running = s.in_flight.value_or(0);
  const double unseen = std::max(0.0, a.in_flight - running - waiting);
  if (s.queued || a.held > 0 || unseen > 0) {
    s.queued = waiting + unseen + a.held;
  }
  s.wakes_refused = a.wakes_refused;
  if (s.arrivals || a.arrivals > 0) {
    s.arrivals = std::max(s.arrivals.value_or(0), a.arrivals);
  }
  return s;
}

}  // namespace pilotlight::runtime
