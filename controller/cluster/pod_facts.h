// What the controller reads off Pods, ReplicaSets and Nodes as the API
// server returns them (JSON): owners, readiness and condition times, when
// the cluster took a pod away, whether the scheduler cannot place it, the
// GPUs it asks for and a node offers. Pure functions of the object (and of
// the time it was seen, where the object carries none).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace pilotlight::cluster {

// The controller's mark on a pod whose node announced its end (its value
// says which node and notice; runtime/leaving_pods.h). The activators send
// such a pod new requests only while its endpoint has no other.
inline constexpr char kLeavingAnnotation[] = "pilotlight.dev/leaving";

// "namespace/name" of the object's controlling owner of `kind` (the
// ownerReference with controller: true, else the first of that kind); ""
// when it has none.
std::string OwnerKey(const nlohmann::json& object, const char* kind);

// When the condition `type` last became True; unset while it is not True.
std::optional<absl::Time> ConditionTime(const nlohmann::json& object,
                                        const char* type);

bool PodReady(const nlohmann::json& pod);
bool PodTerminating(const nlohmann::json& pod);  // deletionTimestamp set
bool PodTerminal(const nlohmann::json& pod);     // Succeeded or Failed

// When the cluster took this pod away (a spot reclaim, a node gone, an
// eviction): the DisruptionTarget condition's time, else for a pod failed
// by an eviction or its node's shutdown the time it stopped (its Ready
// condition turning False, or its containers' finish), else `seen` (when
// the controller first saw it so). Unset for a pod not disrupted.
std::optional<absl::Time> DisruptedAt(const nlohmann::json& pod,
                                      absl::Time seen);

// A pod the scheduler cannot place (PodScheduled False, Unschedulable).
bool PodUnschedulable(const nlohmann::json& pod);

// GPUs the pod's containers ask for (nvidia.com/gpu or amd.com/gpu; limits,
// as extended resources are requested).
int64_t PodGpus(const nlohmann::json& pod);

// The node labels a variant's pods need: its Deployment's pod template
// nodeSelector (what the scheduler uses), else the GPUClass's.
std::map<std::string, std::string> PoolSelector(
    const nlohmann::json& deployment,
    const std::map<std::string, std::string>& gpu_class_selector);

// GPUs a node offers pods: its allocatable GPUs while it is Ready and
// schedulable, else 0.
int64_t NodeGpus(const nlohmann::json& node);

// A node's taint as the API server gives it (spec.taints[]).
struct Taint {
  std::string key;
  std::string value;
  std::string effect;               // NoSchedule, PreferNoSchedule, NoExecute
  std::optional<absl::Time> added;  // timeAdded (NoExecute taints carry it)
};
std::vector<Taint> NodeTaints(const nlohmann::json& node);

// The taints that announce a node is about to go, whatever their effect:
// Karpenter's disruption (`karpenter.sh/disrupted`, and
// `karpenter.sh/disruption` of its v0.3x releases), the AWS node
// termination handler's spot interruption and rebalance recommendation,
// and GKE's impending termination.
std::vector<std::string> DefaultNoticeTaints();

// Whether `taint` on its node says `pod` there will be gone soon: its key is
// one of `notice_keys`, or it is NoExecute and the pod does not tolerate it
// for ever (no toleration, or one with tolerationSeconds: the taint manager
// evicts it then -- the node controller's not-ready and unreachable taints
// are such). A NoExecute taint the pod tolerates without a time limit (a
// dedicated-node taint) announces nothing.
bool TaintAnnouncesEnd(const Taint& taint, const nlohmann::json& pod,
                       const std::vector<std::string>& notice_keys);

}  // namespace pilotlight::cluster
