// `pilotlight gpuclasses`: prints the default GPUClass objects, one per
// catalog entry and capacity type
// (charts/pilotlight/files/gpuclasses/default.yaml is this output for the
// built-in catalog). Wiring only.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pilotlight::cmd {

int RunGpuClasses(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err);

}  // namespace pilotlight::cmd
