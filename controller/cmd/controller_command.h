// `pilotlight controller`: runs the operator (runtime::Controller) until
// SIGTERM/SIGINT. Wiring only: flags -> options.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/cmd/flags.h"
#include "controller/kube/kube_config.h"

namespace pilotlight::cmd {

// --kubeconfig (else $KUBECONFIG, else the in-cluster service account) and
// --context: what every command that talks to the API server reads.
absl::StatusOr<kube::KubeConfig> KubeConfigFromFlags(const ParsedFlags& flags);

int RunController(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err);

}  // namespace pilotlight::cmd
