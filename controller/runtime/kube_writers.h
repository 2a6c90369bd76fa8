// KubeWriters: the reconciler's writers over the Kubernetes API --
// a merge patch of deployments/NAME/scale, a merge patch of
// inferenceautoscalers/NAME/status (one request, no read first: the
// controller owns .status), and a POST of a core/v1 Event.
#pragma once

#include <functional>
#include <string>

#include "controller/kube/clock.h"
#include "controller/kube/kube_client.h"
#include "controller/runtime/writers.h"

namespace pilotlight::runtime {

class KubeWriters final : public ReplicaPatcher,
                          public StatusWriter,
                          public EventRecorder {
 public:
  // `identity`: the Events' reportingInstance; `on_event_error` counts a
  // failed Event (may be null).
  KubeWriters(kube::KubeClient& client, std::string identity,
              const kube::Clock& clock, std::function<void()> on_event_error)
      : client_(client),
        identity_(std::move(identity)),
        clock_(clock),
        on_event_error_(std::move(on_event_error)) {}

  absl::Status Scale(const std::string& ns, const std::string& deployment,
                     int32_t replicas) override;
  absl::Status SetDeletionCost(const std::string& ns, const std::string& pod,
                               int32_t cost) override;
  absl::Status GuardFromDisruption(const std::string& ns,
                                   const std::string& pod, bool guard) override;
  absl::Status MarkLeaving(const std::string& ns, const std::string& pod,
                           const std::string& note) override;
  absl::Status PatchStatus(const std::string& ns, const std::string& name,
                           const nlohmann::json& status) override;
  void Record(const EventSubject& about, const std::string& type,
              const std::string& reason, const std::string& message) override;

  Writers writers() { return Writers{*this, *this, *this}; }

 private:
  // A merge patch of the pod's metadata.annotations (null removes one).
  absl::Status PatchPodAnnotations(const std::string& ns,
                                   const std::string& pod,
                                   const nlohmann::json& annotations);

  kube::KubeClient& client_;
  const std::string identity_;
  const kube::Clock& clock_;
  std::function<void()> on_event_error_;
};

}  // namespace pilotlight::runtime
