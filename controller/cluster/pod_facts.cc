#include "controller/cluster/pod_facts.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"

namespace pilotlight::cluster {
namespace {

using json = nlohmann::json;

constexpr const char* kGpuResources[] = {"nvidia.com/gpu", "amd.com/gpu"};

// A resource quantity of whole devices: "2" or 2.
int64_t Count(const json& v) {
  if (v.is_number_integer()) {
    return v.get<int64_t>();
  }
  int64_t n = 0;
  if (v.is_string() && absl::SimpleAtoi(v.get<std::string>(), &n)) {
    return n;
  }
  return 0;
}

int64_t Gpus(const json& resources) {
  int64_t n = 0;
  for (const char* r : kGpuResources) {
    n += Count(Field(resources, {r}));
  }
  return n;
}

}  // namespace

std::string OwnerKey(const json& object, const char* kind) {
  const json& meta = Field(object, {"metadata"});
  const json* found = nullptr;
  for (const json& o : ArrayField(meta, {"ownerReferences"})) {
    if (StringField(o, {"kind"}) != kind) {
      continue;
    }
    if (found == nullptr || Field(o, {"controller"}) == true) {
      found = &o;
    }
  }
  if (found == nullptr || StringField(*found, {"name"}).empty()) {
    return "";
  }
  return absl::StrCat(StringField(meta, {"namespace"}), "/",
                      StringField(*found, {"name"}));
}

std::optional<absl::Time> ConditionTime(const json& object, const char* type) {
  for (const json& c : ArrayField(object, {"status", "conditions"})) {
    if (StringField(c, {"type"}) == type &&
        StringField(c, {"status"}) == "True") {
      return ParseTime(Field(c, {"lastTransitionTime"}));
    }
  }
  return std::nullopt;
}

bool PodReady(const json& pod) {
  return ConditionTime(pod, "Ready").has_value();
}

bool PodTerminating(const json& pod) {
  return Field(pod, {"metadata", "deletionTimestamp"}).is_string();
}

bool PodTerminal(const json& pod) {
  const std::string phase = StringField(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

std::optional<absl::Time> DisruptedAt(const json& pod, absl::Time seen) {
  if (std::optional<absl::Time> t = ConditionTime(pod, "DisruptionTarget")) {
    return t;
  }
  const std::string reason = StringField(pod, {"status", "reason"});
  if (StringField(pod, {"status", "phase"}) != "Failed" ||
      (reason != "Evicted" && reason != "NodeShutdown" &&
       reason != "Terminated" && reason != "Shutdown")) {
    return std::nullopt;
  }
  // When it stopped: the latest of its containers' finish and its Ready
  // condition's turn to False.
  std::optional<absl::Time> stopped;
  const auto later = [&](std::optional<absl::Time> t) {
    if (t && (!stopped || *t > *stopped)) {
      stopped = t;
    }
  };
  for (const json& c : ArrayField(pod, {"status", "conditions"})) {
    if (StringField(c, {"type"}) == "Ready" &&
        StringField(c, {"status"}) == "False") {
      later(ParseTime(Field(c, {"lastTransitionTime"})));
    }
  }
  for (const json& cs : ArrayField(pod, {"status", "containerStatuses"})) {
    later(ParseTime(Field(cs, {"state", "terminated", "finishedAt"})));
  }
  return stopped ? stopped : std::optional<absl::Time>(seen);
}

bool PodUnschedulable(const json& pod) {
  for (const json& c : ArrayField(pod, {"status", "conditions"})) {
    if (StringField(c, {"type"}) == "PodScheduled" &&
        StringField(c, {"status"}) == "False" &&
        StringField(c, {"reason"}) == "Unschedulable") {
      return true;
    }
  }
  return false;
}

int64_t PodGpus(const json& pod) {
  int64_t n = 0;
  for (const json& c : ArrayField(pod, {"spec", "containers"})) {
    const json& res = Field(c, {"resources"});
    n += std::max(Gpus(Field(res, {"limits"})), Gpus(Field(res, {"requests"})));
  }
  return n;
}

std::map<std::string, std::string> PoolSelector(
    const json& deployment,
    const std::map<std::string, std::string>& gpu_class_selector) {
  const json& sel =
      Field(deployment, {"spec", "template", "spec", "nodeSelector"});
  if (!sel.is_object() || sel.empty()) {
    return gpu_class_selector;
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : sel.items()) {
    if (v.is_string()) {
      out.emplace(k, v.get<std::string>());
    }
  }
  return out;
}

int64_t NodeGpus(const json& node) {
  if (Field(node, {"spec", "unschedulable"}) == true ||
      !ConditionTime(node, "Ready")) {
    return 0;
  }
  return Gpus(Field(node, {"status", "allocatable"}));
}

std::vector<Taint> NodeTaints(const json& node) {
  std::vector<Taint> out;
  for (const json& t : ArrayField(node, {"spec", "taints"})) {
    Taint taint{StringField(t, {"key"}), StringField(t, {"value"}),
                StringField(t, {"effect"}), ParseTime(Field(t, {"timeAdded"}))};
    if (!taint.key.empty()) {
      out.push_back(std::move(taint));
    }
  }
  return out;
}

std::vector<std::string> DefaultNoticeTaints() {
  return {"karpenter.sh/disrupted", "karpenter.sh/disruption",
          "aws-node-termination-handler/spot-itn",
          "aws-node-termination-handler/rebalance-recommendation",
          "cloud.google.com/impending-node-termination"};
}

bool TaintAnnouncesEnd(const Taint& taint, const json& pod,
                       const std::vector<std::string>& notice_keys) {
  if (std::find(notice_keys.begin(), notice_keys.end(), taint.key) !=
      notice_keys.end()) {
    return true;
  }
  if (taint.effect != "NoExecute") {
    return false;
  }
  for (const json& t : ArrayField(pod, {"spec", "tolerations"})) {
    const std::string key = StringField(t, {"key"});
    const std::string effect = StringField(t, {"effect"});
    const bool exists = StringField(t, {"operator"}) == "Exists";
    const bool matches = (effect.empty() || effect == taint.effect) &&
                         (key.empty() ? exists : key == taint.key) &&
                         (exists || StringField(t, {"value"}) == taint.value);
    if (matches && !Field(t, {"tolerationSeconds"}).is_number()) {
      return false;  // tolerated for ever
    }
  }
  return true;
}

}  // namespace pilotlight::cluster
