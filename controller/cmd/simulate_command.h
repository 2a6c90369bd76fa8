// `pilotlight simulate`: replays a trace through the policy core and the
// baselines (controller/sim) and prints a table, JSON, or an HTML report.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pilotlight::cmd {

int RunSimulate(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

}  // namespace pilotlight::cmd
