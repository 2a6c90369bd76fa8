// Make before break for pods whose node announced its end (a spot
// interruption notice, a node autoscaler's disruption taint; see
// cluster::ClusterIndex::NoticeFor). The policy decides as if they were
// gone already (observe.h), so replacements are asked for at once -- on
// on-demand when the notice made the spot class unhealthy. Meanwhile the
// leaving pods keep serving: each variant's Deployment is written with its
// leaving pods on top of the decision until its replacements are Ready
// (policy::ReplicasWithLeaving), then with the decision alone, and the
// ReplicaSet removes the leaving pods first (their deletion cost is the
// lowest). They carry
// pilotlight.dev/leaving, so the activators send them new requests only
// while their endpoint has no other pod, and let their requests finish.
//
// Pure but for MarkLeaving's writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "controller/policy/leaving_replicas.h"
#include "controller/runtime/observe.h"
#include "controller/runtime/writers.h"

namespace pilotlight::runtime {

// What a leaving pod's annotation says: "node <n>: <taint> since <time>".
std::string LeavingNote(const cluster::NodeNotice& notice);

// Marks the pods in namespace `ns` not marked yet: kLeaving and the lowest
// deletion cost. Best effort, as the deletion cost: a pod that could not
// be annotated is logged and tried again at the next reconcile.
void MarkLeaving(const std::string& ns, const std::vector<LeavingPod>& pods,
                 ReplicaPatcher& patcher);

}  // namespace pilotlight::runtime
