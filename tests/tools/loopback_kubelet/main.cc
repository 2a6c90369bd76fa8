// pilotlight-loopback-kubelet: runs the pods bound to the loopback Nodes of
// the local test cluster as real model-server processes
// (loopback_kubelet.h). Stops, killing its processes, on SIGTERM or SIGINT.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/strip.h"
#include "controller/base/host_port.h"
#include "controller/cmd/flags.h"
#include "controller/kube/kube_config.h"
#include "tests/tools/loopback_kubelet/loopback_kubelet.h"

namespace {
std::atomic<bool> stop{false};
void OnSignal(int /*sig*/) { stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  using pilotlight::cmd::FlagSpec;
  const std::vector<FlagSpec> specs = {
      {"kubeconfig", false, "FILE", "kubeconfig (default $KUBECONFIG)"},
      {"model-server", false, "PATH", "the pilotlight-model-server binary"},
      {"pilotlight", false, "PATH",
       "the pilotlight binary, run for pods whose image is pilotlight"},
      {"state-dir", false, "DIR",
       "pilotlight pods' service-account files (default: <log-dir>/../sa)"},
      {"cold-start", false, "DURATION",
       "delay before a pod's process starts (default 3s; the pod annotation "
       "pilotlight.dev/cold-start-seconds overrides it)"},
      {"log-dir", false, "DIR", "where each model server's log goes"},
      {"node-selector", false, "LABELS",
       "label selector of the Nodes to serve (default "
       "pilotlight.dev/loopback=true)"},
      {"ip-octet", false, "N",
       "pods get 127.N.x.y (default 77; one per cluster on a machine)"},
      {"help", true, "", "show this help"},
  };
  pilotlight::cmd::ParsedFlags flags;
  if (std::optional<int> exit = pilotlight::cmd::ParseFlagsOrExit(
          std::vector<std::string>(argv + 1, argv + argc), specs,
          "usage: pilotlight-loopback-kubelet --kubeconfig FILE "
          "--model-server PATH --log-dir DIR [flags]\n",
          std::cout, std::cerr, flags)) {
    return *exit;
  }
  const char* env = std::getenv("KUBECONFIG");
  const std::string kubeconfig =
      flags.String("kubeconfig").value_or(env != nullptr ? env : "");
  if (kubeconfig.empty()) {
    std::cerr << "pilotlight-loopback-kubelet: --kubeconfig is required\n";
    return 2;
  }
  absl::StatusOr<pilotlight::kube::KubeConfig> kube =
      pilotlight::kube::KubeConfigFromFile(kubeconfig);
  if (!kube.ok()) {
    std::cerr << "pilotlight-loopback-kubelet: " << kube.status().message()
              << "\n";
    return 2;
  }
  pilotlight::tools::LoopbackKubeletOptions o;
  o.kube = *kube;
  o.model_server = flags.String("model-server").value_or("");
  o.log_dir = flags.String("log-dir").value_or("");
  o.pilotlight = flags.String("pilotlight").value_or("");
  o.state_dir = flags.String("state-dir").value_or(o.log_dir + "/../sa");
  // In-cluster clients reach the API server where this kubelet does.
  {
    absl::string_view server = o.kube.server;
    absl::ConsumePrefix(&server, "https://");
    const absl::StatusOr<std::pair<std::string, int>> hp =
        pilotlight::SplitHostPort(std::string(server),
                                  "the kubeconfig's server");
    if (!hp.ok()) {
      std::cerr << "pilotlight-loopback-kubelet: " << hp.status().message()
                << "\n";
      return 2;
    }
    o.api_host = hp->first;
    o.api_port = hp->second;
  }
  o.node_selector = flags.String("node-selector").value_or(o.node_selector);
  for (const absl::Status& st :
       {pilotlight::cmd::Set(flags.Duration("cold-start"), o.cold_start),
        pilotlight::cmd::Set(flags.Int("ip-octet"), o.ip_second_octet)}) {
    if (st.ok()) {
      continue;
    }
    std::cerr << st.message() << "\n";
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  const absl::Status st = pilotlight::tools::RunLoopbackKubelet(o, stop);
  if (!st.ok()) {
    std::cerr << "pilotlight-loopback-kubelet: " << st.message() << "\n";
    return 2;
  }
  // Pod watches block until their server-side timeout; nothing is left to
  // flush, so end without waiting for them.
  std::cerr.flush();
  std::_Exit(0);
}
