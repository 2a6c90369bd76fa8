#include "controller/runtime/disruption_guard.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"
#include "controller/cluster/pod_facts.h"
#include "controller/process/log.h"

namespace pilotlight::runtime {

std::vector<GuardChange> DisruptionGuardChanges(
    const std::vector<kube::ObjectCache::ObjectPtr>& pods, absl::Time now,
    absl::Duration warm_up) {
  std::vector<GuardChange> changes;
  for (const kube::ObjectCache::ObjectPtr& pod : pods) {
    if (pod == nullptr || cluster::PodTerminating(*pod) ||
        cluster::PodTerminal(*pod)) {
      continue;
    }
    // Unset while the pod is not Ready (cluster::PodReady).
    const std::optional<absl::Time> ready_at =
        cluster::ConditionTime(*pod, "Ready");
    const bool want = !ready_at || now - *ready_at < warm_up;
    const auto annotation = [&](const char* name) {
      return StringField(*pod, {"metadata", "annotations", name});
    };
    const bool ours = annotation(kDisruptionGuard) == "true";
    const bool theirs = !ours && annotation(kDoNotDisrupt) == "true";
    const std::string name = StringField(*pod, {"metadata", "name"});
    if (want && !ours && !theirs) {
      changes.push_back({name, true});
    } else if (!want && ours) {
      changes.push_back({name, false});
    }
  }
  return changes;
}

void GuardFromDisruption(const std::string& ns,
                         const std::vector<kube::ObjectCache::ObjectPtr>& pods,
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
