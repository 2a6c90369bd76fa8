#include "controller/model/tuning_file.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "controller/model/yaml_document.h"
#include "yaml-cpp/yaml.h"

namespace pilotlight::model {
namespace {

struct NumberKey {
  const char* key;
  double EngineTuning::*field;
};
struct DurationKey {
  const char* key;
  absl::Duration EngineTuning::*field;
};

// In the order FormatTuningFile writes them.
constexpr NumberKey kNumbers[] = {
    {"memoryBandwidthUtilization", &EngineTuning::memory_bandwidth_utilization},
    {"weightReadEfficiency8bit", &EngineTuning::weight_read_efficiency_8bit},
    {"weightReadEfficiency4bit", &EngineTuning::weight_read_efficiency_4bit},
    {"moeExpertReadEfficiency", &EngineTuning::moe_expert_read_efficiency},
    {"modelFlopsUtilization", &EngineTuning::model_flops_utilization},
    {"modelFlopsUtilization8bit", &EngineTuning::model_flops_utilization_8bit},
    {"modelFlopsUtilizationFp4", &EngineTuning::model_flops_utilization_fp4},
    {"rooflineOverlap", &EngineTuning::roofline_overlap},
};
constexpr DurationKey kDurations[] = {
    {"stepOverhead", &EngineTuning::step_overhead},
    {"requestOverhead", &EngineTuning::request_overhead},
    {"allreduceLatencyNvlink", &EngineTuning::allreduce_latency_nvlink},
    {"allreduceLatencyPcie", &EngineTuning::allreduce_latency_pcie},
};
constexpr const char* kGroupKey = "int4GroupSize";

}  // namespace

absl::StatusOr<EngineTuning> ParseTuning(absl::string_view yaml,
                                         absl::string_view origin,
                                         const EngineTuning& base) {
  absl::StatusOr<YAML::Node> doc = LoadYamlDocument(yaml, origin);
  if (!doc.ok()) {
    return doc.status();
  }
  const YAML::Node root = *doc;
  if (!root.IsMap() || !root["kind"] ||
      root["kind"].as<std::string>("") != "SizingTuning") {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": expected a map with kind: SizingTuning"));
  }
  EngineTuning t = base;
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>("");
    if (key == "kind") {
      continue;
    }
    const std::string where = absl::StrCat(origin, ": ", key);
    const YAML::Node& value = entry.second;
    bool known = false;
    try {
      for (const NumberKey& k : kNumbers) {
        if (key == k.key) {
          t.*k.field = value.as<double>();
          known = true;
        }
      }
      for (const DurationKey& k : kDurations) {
        if (key == k.key) {
          if (!absl::ParseDuration(value.as<std::string>(), &(t.*k.field))) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": \"", value.as<std::string>(),
                             "\" is not a duration (e.g. 1.5ms, 800us)"));
          }
          known = true;
        }
      }
      if (key == kGroupKey) {
        t.int4_group_size = value.as<int>();
        known = true;
      }
    } catch (const YAML::Exception&) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": expected ", key == kGroupKey ? "an integer" : "a number"));
    }
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat(where,
                       ": unknown key (see controller/model/"
                       "tuning_file.h for the keys)"));
    }
  }
  if (absl::Status s = ValidateTuning(t); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", s.message()));
  }
  return t;
}

std::string FormatTuningFile(const EngineTuning& t) {
  std::string out = "kind: SizingTuning\n";
  for (const NumberKey& k : kNumbers) {
    absl::StrAppendFormat(&out, "%s: %.6g\n", k.key, t.*k.field);
  }
  for (const DurationKey& k : kDurations) {
    absl::StrAppend(&out, k.key, ": ", absl::FormatDuration(t.*k.field), "\n");
  }
  absl::StrAppend(&out, kGroupKey, ": ", t.int4_group_size, "\n");
  return out;
}

}  // namespace pilotlight::model
