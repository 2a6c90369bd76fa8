// `pilotlight activator`: runs the activator (activator::Activator) until
// SIGTERM/SIGINT, then drains. Wiring only: flags -> options.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pilotlight::cmd {

int RunActivator(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err);

}  // namespace pilotlight::cmd
