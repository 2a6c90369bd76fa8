// The policies Pilotlight is compared with, re-implemented from their
// documented semantics (each class names its source; docs/simulator.md
// "Policies" lists them with their defaults), and the
// adapter that runs the real policy core. Each baseline scales the
// endpoint's first variant and gets the same per-replica capacity (the
// sizing model's concurrency at the SLO, `slots`), with its target set from
// it as a competent operator would: Knative's and KEDA's concurrency target
// = slots x 70 % (their default utilisation).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/model/catalog.h"
#include "controller/policy/decider.h"
#include "controller/sim/scaling_policy.h"
#include "controller/sim/simulator.h"

namespace pilotlight::sim {

// The names `pilotlight simulate --policies` accepts, in report order.
const std::vector<std::string>& PolicyNames();

// The arrivals pilotlight is given, as the controller merges them
// (runtime/merged_demand.h, prom_demand.h): the activator's exact count
// since the last observation or Prometheus's rate times the time since it
// (`tick` at the first; at most `rate_window`), the larger. At rate x tick
// each, a poke's observation between two ticks counted a tick's arrivals
// again. With no replica ready the rate is not there (live it is summed
// over Ready pods): the activator's count alone.
double MergedArrivals(const Observation& o, std::optional<absl::Time> last,
                      absl::Duration tick, absl::Duration rate_window);

struct PolicyContext {
  const SimConfig* config = nullptr;
  const std::vector<ServiceModel>* models = nullptr;
  const EndpointTrace* trace = nullptr;  // the oracle and always-on read it
  bool service_times = false;
  // The policy's natural knob (PolicyKnob); unset: its default.
  std::optional<double> knob;
};

// The one setting of a policy that trades cost for latency, which the
// matched-SLO sweep (match.h) varies: pilotlight's, Knative's and KEDA's
// target utilisation of a replica's capacity; keepalive's keep-alive.
struct PolicyKnob {
  std::string name;           // e.g. "target utilisation"
  std::string unit;           // "" or e.g. "min"
  double default_value = 0;   // the policy's own default
  std::vector<double> sweep;  // from its default towards more capacity
};
// nullopt for a policy without one (hybrid-histogram sizes its keep-alive
// from its own histogram; always-on and the oracle have nothing to trade).
std::optional<PolicyKnob> KnobOf(const std::string& policy);

absl::StatusOr<ScalingPolicyPtr> MakePolicy(const std::string& name,
                                            const PolicyContext& ctx);

}  // namespace pilotlight::sim
