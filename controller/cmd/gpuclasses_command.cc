#include "controller/cmd/gpuclasses_command.h"

#include <ostream>

#include "controller/api/resources.h"
#include "controller/base/exit_codes.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/inputs.h"

namespace pilotlight::cmd {

int RunGpuClasses(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err) {
  CatalogInput catalog_file;
  FlagSet flags(
      "pilotlight gpuclasses",
      "usage: pilotlight gpuclasses [--catalog FILE]\n\n"
      "Prints a GPUClass object for every catalog entry, on-demand and\n"
      "(where it has a spot price) spot, to apply with kubectl.\n\n");
  catalog_file.Declare(flags);
  if (std::optional<int> exit = flags.ParseOrExit(args, out, err)) {
    return *exit;
  }
  absl::StatusOr<model::Catalog> catalog = catalog_file.Load();
  if (!catalog.ok()) {
    err << "pilotlight gpuclasses: " << catalog.status().message() << "\n";
    return kExitUsage;
  }
  out << api::DefaultGpuClassesYaml(*catalog);
  return kExitOk;
}

}  // namespace pilotlight::cmd
