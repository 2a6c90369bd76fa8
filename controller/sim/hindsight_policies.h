// The policies that plan from the whole trace, in hindsight: always-on at
// the trace's peak, and the oracle -- every replica started one cold start
// before it is needed and stopped when it is not, so no request waits: the
// lower bound on cost at zero cold starts.
#pragma once

#include "controller/sim/baselines.h"
#include "controller/sim/scaling_policy.h"

namespace pilotlight::sim {

ScalingPolicyPtr MakeAlwaysOn(const PolicyContext& ctx);
ScalingPolicyPtr MakeOracle(const PolicyContext& ctx);

}  // namespace pilotlight::sim
