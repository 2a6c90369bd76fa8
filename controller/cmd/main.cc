// The one Pilotlight binary. Wiring only: picks the subcommand and hands it
// the remaining arguments.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "controller/cmd/activator_command.h"
#include "controller/cmd/controller_command.h"
#include "controller/cmd/explain_command.h"
#include "controller/cmd/gpuclasses_command.h"
#include "controller/cmd/simulate_command.h"
#include "controller/cmd/size_command.h"

namespace {

constexpr absl::string_view kUsage =
    "usage: pilotlight <command> [flags]\n"
    "\n"
    "Commands:\n"
    "  size       which GPU class, how many GPUs and what cost for a model\n"
    "  simulate   replay a request trace through the policy and baselines\n"
    "  gpuclasses print the default GPUClass objects from the catalog\n"
    "  controller run the operator against a cluster\n"
    "  activator  hold requests for endpoints at zero and forward them\n"
    "  explain    why an endpoint runs what it runs, in dollars\n"
    "  version    print the version\n"
    "\n"
    "Run 'pilotlight <command> --help' for a command's flags.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return pilotlight::kExitUsage;
  }
  const absl::string_view command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "size") {
    return pilotlight::cmd::RunSize(args, std::cout, std::cerr);
  }
  if (command == "simulate") {
    return pilotlight::cmd::RunSimulate(args, std::cout, std::cerr);
  }
  if (command == "controller") {
    return pilotlight::cmd::RunController(args, std::cout, std::cerr);
  }
  if (command == "activator") {
    return pilotlight::cmd::RunActivator(args, std::cout, std::cerr);
  }
  if (command == "explain") {
    return pilotlight::cmd::RunExplain(args, std::cout, std::cerr);
  }
  if (command == "gpuclasses") {
    return pilotlight::cmd::RunGpuClasses(args, std::cout, std::cerr);
  }
  if (command == "version" || command == "--version") {
    std::cout << "pilotlight " << PILOTLIGHT_VERSION << "\n";
    return pilotlight::kExitOk;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return pilotlight::kExitOk;
  }
  std::cerr << "pilotlight: unknown command \"" << command << "\"\n" << kUsage;
  return pilotlight::kExitUsage;
}
