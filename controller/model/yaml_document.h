// One YAML document from text, with the error naming where it came from:
// the shared first step of the model's YAML readers (the GPU catalog, saved
// calibrations).
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace pilotlight::model {

// InvalidArgument "<origin>: not valid YAML: ..." when it does not parse.
absl::StatusOr<YAML::Node> LoadYamlDocument(absl::string_view text,
                                            absl::string_view origin);

}  // namespace pilotlight::model
