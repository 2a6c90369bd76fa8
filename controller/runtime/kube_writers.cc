#include "controller/runtime/kube_writers.h"

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"
#include "controller/process/log.h"
#include "controller/runtime/disruption_guard.h"

namespace pilotlight::runtime {

using json = nlohmann::json;

absl::Status KubeWriters::Scale(const std::string& ns,
                                const std::string& deployment,
                                int32_t replicas) {
  return client_
      .Request("PATCH",
               absl::StrCat("/apis/apps/v1/namespaces/", ns, "/deployments/",
                            deployment, "/scale"),
               json{{"spec", {{"replicas", replicas}}}}.dump(),
               "application/merge-patch+json")
      .status();
}

absl::Status KubeWriters::PatchPodAnnotations(const std::string& ns,
                                              const std::string& pod,
                                              const json& annotations) {
  return client_
      .Request("PATCH", absl::StrCat("/api/v1/namespaces/", ns, "/pods/", pod),
               json{{"metadata", {{"annotations", annotations}}}}.dump(),
               "application/merge-patch+json")
      .status();
}

absl::Status KubeWriters::SetDeletionCost(const std::string& ns,
                                          const std::string& pod,
                                          int32_t cost) {
  return PatchPodAnnotations(ns, pod, {{kPodDeletionCost, absl::StrCat(cost)}});
}

absl::Status KubeWriters::GuardFromDisruption(const std::string& ns,
                                              const std::string& pod,
                                              bool guard) {
  // A merge patch: null removes an annotation.
  const json on = guard ? json("true") : json(nullptr);
  const json off = guard ? json("false") : json(nullptr);
  return PatchPodAnnotations(
      ns, pod,
      {{kDoNotDisrupt, on}, {kSafeToEvict, off}, {kDisruptionGuard, on}});
}

absl::Status KubeWriters::MarkLeaving(const std::string& ns,
                                      const std::string& pod,
                                      const std::string& note) {
  return PatchPodAnnotations(
      ns, pod,
      {{kLeaving, note},
       {kPodDeletionCost, absl::StrCat(kLeavingDeletionCost)}});
}

absl::Status KubeWriters::PatchStatus(const std::string& ns,
                                      const std::string& name,
                                      const json& status) {
  return client_
      .Request("PATCH",
               absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/", ns,
                            "/inferenceautoscalers/", name, "/status"),
               // Condition messages may quote outside answers: never let
               // a stray byte throw.
               json{{"status", status}}.dump(-1, ' ', false,
                                             json::error_handler_t::replace),
               "application/merge-patch+json")
      .status();
}

void KubeWriters::Record(const EventSubject& about, const std::string& type,
                         const std::string& reason,
                         const std::string& message) {
  const absl::Time now = clock_.Now();
  const json ev = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"name", absl::StrCat(about.name, ".", absl::ToUnixNanos(now))},
        {"namespace", about.ns}}},
      {"involvedObject",
       {{"apiVersion", "pilotlight.dev/v1alpha1"},
        {"kind", "InferenceAutoscaler"},
        {"name", about.name},
        {"namespace", about.ns},
        {"uid", about.uid}}},
      {"reason", reason},
      {"message", message.substr(0, 1024)},
      {"type", type},
      {"source", {{"component", "pilotlight-controller"}}},
      {"reportingComponent", "pilotlight.dev/controller"},
      {"reportingInstance", identity_},
      {"firstTimestamp", FormatRfc3339(now)},
      {"lastTimestamp", FormatRfc3339(now)},
      {"count", 1}};
  absl::StatusOr<kube::KubeClient::Response> r = client_.Request(
      "POST", absl::StrCat("/api/v1/namespaces/", about.ns, "/events"),
      ev.dump(-1, ' ', false, json::error_handler_t::replace));
  if (!r.ok()) {
    if (on_event_error_) {
      on_event_error_();
    }
    process::LogJson("warn", "event not recorded",
                     {{"error", r.status().ToString()}});
  }
}

}  // namespace pilotlight::runtime
