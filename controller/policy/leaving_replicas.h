// Make before break for replicas whose node announced its end (a spot
// interruption notice, a node autoscaler's disruption): the policy decides
// as if they were gone, and they keep serving until their replacements are
// Ready. The controller writes each variant's Deployment with them on top
// (runtime/leaving_pods.h); the simulator keeps its noticed replicas the
// same way. Pure.
#pragma once

#include <cstdint>
#include <vector>

namespace pilotlight::policy {

// Per variant, the replicas to keep: `decided`, plus its `leaving` ones
// while its own replacements are not all Ready (`ready`: its ready
// replicas that are not leaving) or the endpoint's ready replicas are
// fewer than `need` (what its load and warm pool need, whichever variants
// serve: a spot variant given up for on-demand keeps its leaving replicas
// until the on-demand ones are Ready).
std::vector<int32_t> ReplicasWithLeaving(const std::vector<int32_t>& decided,
                                         const std::vector<int32_t>& ready,
                                         const std::vector<int32_t>& leaving,
                                         int32_t need);

}  // namespace pilotlight::policy
