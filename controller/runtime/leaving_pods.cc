#include "controller/runtime/leaving_pods.h"

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"
#include "controller/process/log.h"

namespace pilotlight::runtime {

std::string LeavingNote(const cluster::NodeNotice& notice) {
  return absl::StrCat(
      "node ", notice.node, ": ", notice.taint, " since ",
      absl::FormatTime(absl::RFC3339_sec, notice.at, absl::UTCTimeZone()));
}

void MarkLeaving(const std::string& ns, const std::vector<LeavingPod>& pods,
                 ReplicaPatcher& patcher) {
  for (const LeavingPod& l : pods) {
    if (Field(*l.pod, {"metadata", "annotations", kLeaving}).is_string()) {
      continue;
    }
    const std::string name = StringField(*l.pod, {"metadata", "name"});
    const std::string note = LeavingNote(l.notice);
    if (absl::Status st = patcher.MarkLeaving(ns, name, note); !st.ok()) {
      process::LogJson("warn", "leaving pod not marked",
                       {{"pod", absl::StrCat(ns, "/", name)},
                        {"notice", note},
                        {"error", st.ToString()}});
    }
  }
}

}  // namespace pilotlight::runtime
