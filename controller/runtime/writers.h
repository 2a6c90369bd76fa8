// The reconciler's edges toward the cluster, as three narrow interfaces:
// patch a Deployment's replicas (/scale) and its pods' deletion cost and
// disruption guard, write
// an InferenceAutoscaler's status, record an Event. KubeWriters implements them
// over one API client (one per worker thread); tests record what was asked
// instead.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "controller/cluster/pod_facts.h"
#include "nlohmann/json.hpp"

namespace pilotlight::runtime {

// The annotation a ReplicaSet ranks its pods by when it scales down.
inline constexpr char kPodDeletionCost[] =
    "controller.kubernetes.io/pod-deletion-cost";

// A pod on a node that announced its end (leaving_pods.h).
inline constexpr const char* kLeaving = cluster::kLeavingAnnotation;
// Its deletion cost: below any the controller sets otherwise (requests).
inline constexpr int32_t kLeavingDeletionCost =
    std::numeric_limits<int32_t>::min();

class ReplicaPatcher {
 public:
  virtual ~ReplicaPatcher() = default;
  virtual absl::Status Scale(const std::string& ns,
                             const std::string& deployment,
                             int32_t replicas) = 0;
  // Sets the pod's controller.kubernetes.io/pod-deletion-cost: a
  // ReplicaSet scaling down removes the pods of lower cost first.
  virtual absl::Status SetDeletionCost(const std::string& ns,
                                       const std::string& pod,
                                       int32_t cost) = 0;
  // Sets (or removes) the pod's guard against node autoscalers'
  // consolidation: karpenter.sh/do-not-disrupt, the cluster autoscaler's
  // safe-to-evict and Pilotlight's own mark (disruption_guard.h).
  virtual absl::Status GuardFromDisruption(const std::string& ns,
                                           const std::string& pod,
                                           bool guard) = 0;
  // Marks a leaving pod: kLeaving = `note` and kLeavingDeletionCost.
  virtual absl::Status MarkLeaving(const std::string& ns,
                                   const std::string& pod,
                                   const std::string& note) = 0;
};

class StatusWriter {
 public:
  virtual ~StatusWriter() = default;
  // `status` is a JSON merge patch of .status: a null member removes it.
  virtual absl::Status PatchStatus(const std::string& ns,
                                   const std::string& name,
                                   const nlohmann::json& status) = 0;
};

// The InferenceAutoscaler an Event is about.
struct EventSubject {
  std::string ns;
  std::string name;
  std::string uid;
};

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  // Best effort: a failure is counted and logged, never retried.
  virtual void Record(const EventSubject& about, const std::string& type,
                      const std::string& reason,
                      const std::string& message) = 0;
};

struct Writers {
  ReplicaPatcher& patcher;
  StatusWriter& status;
  EventRecorder& events;
};

}  // namespace pilotlight::runtime
