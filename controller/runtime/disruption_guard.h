// Which pods a node autoscaler must not take away while they are worth
// most and can serve least: starting (pulling, loading weights, capturing
// graphs) and for a short warm-up after Ready. Such a pod carries
// karpenter.sh/do-not-disrupt "true" and the cluster autoscaler's
// safe-to-evict "false" -- consolidation would throw away a cold start in
// progress -- and loses them once it serves; which pod goes on a scale-down
// stays chosen by deletion cost. Pilotlight marks the pods it guards
// (pilotlight.dev/disruption-guard) and removes only its own: a pod whose
// template asks for do-not-disrupt itself keeps it.
//
// Pure: the pods as the API server returns them, and `now`.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/kube/informer.h"
#include "controller/runtime/writers.h"

namespace pilotlight::runtime {

inline constexpr char kDoNotDisrupt[] = "karpenter.sh/do-not-disrupt";
inline constexpr char kSafeToEvict[] =
    "cluster-autoscaler.kubernetes.io/safe-to-evict";
inline constexpr char kDisruptionGuard[] = "pilotlight.dev/disruption-guard";

// After Ready, a pod stays guarded this long: the engine's first requests
// arrive in it (the activator's held ones at once), and a node autoscaler
// judging it idle before then would judge an engine that has not started.
inline constexpr absl::Duration kDisruptionWarmUp = absl::Minutes(2);

struct GuardChange {
  std::string pod;  // name
  bool guard = false;
};

// The guards to set or remove on `pods` (one Deployment's or several) at
// `now`. Terminating and finished pods are left as they are.
std::vector<GuardChange> DisruptionGuardChanges(
    const std::vector<kube::ObjectCache::ObjectPtr>& pods, absl::Time now,
    absl::Duration warm_up = kDisruptionWarmUp);

// Writes those changes for pods in namespace `ns`. Best effort, as the
// deletion cost: a pod that could not be annotated (gone meanwhile, no
// RBAC) is logged and tried again at the next reconcile.
void GuardFromDisruption(const std::string& ns,
                         const std::vector<kube::ObjectCache::ObjectPtr>& pods,
                         absl::Time now, ReplicaPatcher& patcher);

}  // namespace pilotlight::runtime
