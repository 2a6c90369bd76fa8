// Make before break for pods whose node announced its end (a spot
// interruption notice, a node autoscaler's disruption taint; see
// cluster::ClusterIndex::NoticeFor). The policy decides as if they were
// gone already (observe.h), so replacements are asked for at once -- on
// on-demand when the notice made the spot class unhealthy. Meanwhile the
// leaving pods keep serving: each variant's Deployment is written with its
// leaving pods on top of the decision until the endpoint's replacements
// are Ready, then with the decision alone, and the ReplicaSet removes the
// leaving pods first (their deletion cost is the lowest). They carry
// pilotlight.dev/leaving, so the activators send them new requests only
// while their endpoint has no other pod, and let their requests finish.
//
// Pure but for MarkLeaving's writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "controller/runtime/observe.h"
#include "controller/runtime/writers.h"

namespace pilotlight::runtime {

// Per variant, the replicas to write: `decided`, plus its `leaving` pods
// while its own replacements are not all Ready (`ready`: its ready pods
// that are not leaving) or the endpoint's ready pods are fewer than `need`
// (the replicas its load and warm pool need, whichever variants serve:
// a spot variant given up for on-demand keeps its leaving pods until the
// on-demand ones are Ready).
std::vector<int32_t> ReplicasWithLeaving(const std::vector<int32_t>& decided,
                                         const std::vector<int32_t>& ready,
                                         const std::vector<int32_t>& leaving,
                                         int32_t need);

// What a leaving pod's annotation says: "node <n>: <taint> since <time>".
std::string LeavingNote(const cluster::NodeNotice& notice);

// Marks the pods in namespace `ns` not marked yet: kLeaving and the lowest
// deletion cost. Best effort, as the deletion cost: a pod that could not
// be annotated is logged and tried again at the next reconcile.
void MarkLeaving(const std::string& ns, const std::vector<LeavingPod>& pods,
                 ReplicaPatcher& patcher);

}  // namespace pilotlight::runtime
