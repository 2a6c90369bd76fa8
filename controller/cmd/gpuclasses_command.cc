#include "controller/cmd/gpuclasses_command.h"

#include <ostream>

#include "controller/api/resources.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/size_command.h"

namespace pilotlight::cmd {

int RunGpuClasses(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err) {
  const std::vector<FlagSpec> specs = {
      {"catalog", false, "FILE",
       "GPU catalog YAML (default: the built-in one)"},
      {"help", true, "", "show this help"},
  };
  ParsedFlags flags;
  if (std::optional<int> exit = ParseFlagsOrExit(
          args, specs,
          "usage: pilotlight gpuclasses [--catalog FILE]\n\n"
          "Prints a GPUClass object for every catalog entry, on-demand and\n"
          "(where it has a spot price) spot, to apply with kubectl.\n\n",
          out, err, flags)) {
    return *exit;
  }
  absl::StatusOr<model::Catalog> catalog = LoadCatalog(flags);
  if (!catalog.ok()) {
    err << "pilotlight gpuclasses: " << catalog.status().message() << "\n";
    return kExitUsage;
  }
  out << api::DefaultGpuClassesYaml(*catalog);
  return kExitOk;
}

}  // namespace pilotlight::cmd
