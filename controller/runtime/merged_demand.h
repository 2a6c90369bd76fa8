// MergedDemand: the DemandSource the controller runs on -- Prometheus (what
// the model servers report) merged with the activators' stream (what waits
// for a replica), without counting a request twice:
//
//   in_flight = engines' running; while Prometheus has none (new pods
//               not scraped yet), the activators' in-flight less the
//               engines' waiting (forwarded requests run: the activator
//               sends a pod no more than its concurrency)
//   queued    = engines' waiting + the activators' in-flight beyond the
//               engines' running and waiting (forwarded, not yet seen) +
//               held at the activators (never reached a pod)
//   arrivals  = max(Prometheus, activators): a request through the
//               activator reaches a pod too, one sent straight to a pod is
//               seen by Prometheus alone
//
// A signal Prometheus could not read stays unset (missing is not zero). While
// the activators' demand is incomplete (one of them lost, or just after
// start) the sample is marked partial and the gap named in `missing`: the
// policy scales up for what is seen (a request held at zero is served at
// once) but never down on demand it cannot see.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "controller/runtime/activator_demand.h"
#include "controller/runtime/demand_source.h"

namespace pilotlight::runtime {

class MergedDemand final : public DemandSource {
 public:
  MergedDemand(DemandSource& prom, ActivatorDemand& activators)
      : prom_(prom), activators_(activators) {}

  int64_t Epoch(const std::string& endpoint) const override;
  policy::DemandSample Read(const api::AutoscalerResource& endpoint,
                            const std::vector<std::string>& ready_pods,
                            absl::Time now, std::string& missing) override;
  // The engines' own figures per pod (the activators report per endpoint).
  std::map<std::string, double> BusyPods(
      const api::AutoscalerResource& endpoint,
      const std::vector<std::string>& pods) const override {
    return prom_.BusyPods(endpoint, pods);
  }
  void Forget(const std::string& endpoint) override;

 private:
  DemandSource& prom_;
  ActivatorDemand& activators_;
  // Per endpoint, the Prometheus epoch whose engine latency was handed on:
  // a read between two refreshes (an activator's poke) reads the same
  // window and must not feed the calibrator it twice.
  std::mutex mu_;
  std::map<std::string, int64_t> latency_epoch_;
};

}  // namespace pilotlight::runtime
