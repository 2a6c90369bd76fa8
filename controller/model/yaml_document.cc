#include "controller/model/yaml_document.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace pilotlight::model {

absl::StatusOr<YAML::Node> LoadYamlDocument(absl::string_view text,
                                            absl::string_view origin) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": not valid YAML: ", e.what()));
  }
}

}  // namespace pilotlight::model
