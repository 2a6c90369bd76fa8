// Conversion of a model::SizingReport to its proto (proto/pilotlight/v1/
// sizing.proto) and to the JSON document `pilotlight size --json` prints.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "controller/model/sizing.h"
#include "pilotlight/v1/sizing.pb.h"

namespace pilotlight::api {

pilotlight::v1::SizeReport ToProto(const model::SizingReport& report);

// Proto3 JSON with proto field names and every field printed; an absent
// recommendation is written as null. Pretty-printed with two-space indents.
absl::StatusOr<std::string> ToJson(const pilotlight::v1::SizeReport& report);

}  // namespace pilotlight::api
