// `pilotlight size`: which GPU class, how many GPUs per replica, at what
// precision and cost, for a model and an SLO. Wiring only: flags -> a
// model::SizingRequest -> model::Size -> a table or JSON.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "controller/base/exit_codes.h"

namespace pilotlight::cmd {

int RunSize(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

}  // namespace pilotlight::cmd
