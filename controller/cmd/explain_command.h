// `pilotlight explain <namespace>/<name>`: why an endpoint runs what it
// runs, in dollars, from its live InferenceAutoscaler (api/explain.h).
// Wiring only.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pilotlight::cmd {

int RunExplain(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace pilotlight::cmd
