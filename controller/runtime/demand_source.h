// DemandSource: where the reconciler gets an endpoint's demand: Prometheus
// (PromDemand: one batched read per tick, joined to the endpoint's ready
// pods) merged with the activators' stream (MergedDemand); tests hand in a
// fake.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/api/resources.h"
#include "controller/policy/snapshot.h"

namespace pilotlight::runtime {

class DemandSource {
 public:
  virtual ~DemandSource() = default;

  // Changes whenever new demand can be read for `endpoint` ("ns/name";
  // Prometheus: once a tick; the activator: when it pokes). The reconciler
  // decides once per epoch; reconciles in between (a pod changed) only
  // refresh the status.
  virtual int64_t Epoch(const std::string& endpoint) const = 0;

  // The endpoint's demand at `now`, summed over `ready_pods` ("ns/name").
  // A signal that could not be read is left unset -- missing is never zero
  // -- and named in `missing` ("arrival rate: no series for pod ml/x; ").
  virtual policy::DemandSample Read(const api::AutoscalerResource& endpoint,
                                    const std::vector<std::string>& ready_pods,
                                    absl::Time now, std::string& missing) = 0;

  // Requests on each of `pods` ("ns/name") as last read (running + waiting):
  // which pods a scale-down should spare. A pod not known is left out.
  virtual std::map<std::string, double> BusyPods(
      const api::AutoscalerResource& /*endpoint*/,
      const std::vector<std::string>& /*pods*/) const {
    return {};
  }

  // `endpoint` ("ns/name") was deleted: drop what is kept for it.
  virtual void Forget(const std::string& /*endpoint*/) {}
};

}  // namespace pilotlight::runtime
