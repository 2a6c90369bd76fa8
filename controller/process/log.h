// Structured logs: one JSON object per line on stderr,
//   {"ts":"2026-12-02T19:40:01.123Z","level":"info","msg":"scaled",
//    "endpoint":"ml/chat","deployment":"chat-l4","from":1,"to":3,...}
// so `kubectl logs | jq` and log pipelines read them without parsing prose.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace pilotlight::process {

void LogJson(absl::string_view level, absl::string_view msg,
             const nlohmann::json& fields = nlohmann::json::object());

}  // namespace pilotlight::process
