// File: controller/sim/baselines.h
//
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

struct PolicyContext {
  const SimConfig* config = nullptr;
  const std::vector<ServiceModel>* models = nullptr;
  const EndpointTrace* trace = nullptr;  // the oracle and always-on read it
  bool service_times = false;
};

absl::StatusOr<ScalingPolicyPtr> MakePolicy(const std::string& name,
                                            const PolicyContext& ctx);

}  // namespace pilotlight::sim
