// `pilotlight explain`: why an endpoint runs what it runs, in dollars, read
// from its InferenceAutoscaler's live status (status.economics, written by
// the controller with each decision that changed the status). Pure: JSON
// in, text or JSON out.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace pilotlight::api {

// The explanation as text for a terminal (the object as the API server
// returns it).
std::string ExplainText(const nlohmann::json& autoscaler);

// The same facts as one JSON object: endpoint, conditions, lastDecision,
// replicas, tier, keepAliveSeconds, economics (null before a decision).
nlohmann::json ExplainJson(const nlohmann::json& autoscaler);

}  // namespace pilotlight::api
