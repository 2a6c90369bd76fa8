// `pilotlight controller`: runs the operator (runtime::Controller) until
// SIGTERM/SIGINT. Wiring only: flags -> options.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pilotlight::cmd {

int RunController(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err);

}  // namespace pilotlight::cmd
