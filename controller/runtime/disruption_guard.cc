#include "controller/runtime/disruption_guard.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "controller/cluster/pod_facts.h"
#include "controller/process/log.h"

namespace pilotlight::runtime {

namespace {

std::string Annotation(const nlohmann::json& pod, const char* name) {
  const nlohmann::json* meta =
      pod.contains("metadata") ? &pod["metadata"] : nullptr;
  if (meta == nullptr || !meta->contains("annotations") ||
      !(*meta)["annotations"].is_object()) {
    return "";
  }
  const nlohmann::json& a = (*meta)["annotations"];
  const auto it = a.find(name);
  return it != a.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::vector<GuardChange> DisruptionGuardChanges(
    const std::vector<const nlohmann::json*>& pods, absl::Time now,
    absl::Duration warm_up) {
  std::vector<GuardChange> changes;
  for (const nlohmann::json* pod : pods) {
    if (pod == nullptr || cluster::PodTerminating(*pod) ||
        cluster::PodTerminal(*pod)) {
      continue;
    }
    // Unset while the pod is not Ready (cluster::PodReady).
    const std::optional<absl::Time> ready_at =
        cluster::ConditionTime(*pod, "Ready");
    const bool want = !ready_at || now - *ready_at < warm_up;
    const bool ours = Annotation(*pod, kDisruptionGuard) == "true";
    const bool theirs = !ours && Annotation(*pod, kDoNotDisrupt) == "true";
    const std::string name =
        pod->value("metadata", nlohmann::json::object()).value("name", "");
    if (want && !ours && !theirs) {
      changes.push_back({name, true});
    } else if (!want && ours) {
      changes.push_back({name, false});
    }
  }
  return changes;
}

void GuardFromDisruption(const std::string& ns,
                         const std::vector<const nlohmann::json*>& pods,
                         absl::Time now, ReplicaPatcher& patcher) {
  for (const GuardChange& c : DisruptionGuardChanges(pods, now)) {
    if (absl::Status st = patcher.GuardFromDisruption(ns, c.pod, c.guard);
        !st.ok()) {
      process::LogJson("warn", "pod disruption guard not written",
                       {{"pod", absl::StrCat(ns, "/", c.pod)},
                        {"guard", c.guard},
                        {"error", st.ToString()}});
    }
  }
}

}  // namespace pilotlight::runtime
