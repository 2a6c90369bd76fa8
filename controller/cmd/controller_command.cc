#include "controller/cmd/controller_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <ostream>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/size_command.h"
#include "controller/kube/kube_config.h"
#include "controller/runtime/controller.h"
#include "controller/runtime/real_clock.h"

namespace pilotlight::cmd {
namespace {

std::atomic<bool> stop_requested{false};
void OnSignal(int /*sig*/) { stop_requested.store(true); }

std::string DefaultIdentity() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) {
    host[0] = '\0';
  }
  std::random_device rd;
  return absl::StrCat(host[0] != '\0' ? host : "pilotlight", "_",
                      absl::Hex(rd(), absl::kZeroPad8));
}

}  // namespace

absl::StatusOr<kube::KubeConfig> KubeConfigFromFlags(const ParsedFlags& flags) {
  const char* env = std::getenv("KUBECONFIG");
  const std::string path =
      flags.String("kubeconfig").value_or(env != nullptr ? env : "");
  return path.empty() ? kube::InClusterConfig()
                      : kube::KubeConfigFromFile(
                            path, flags.String("context").value_or(""));
}

int RunController(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err) {
  const std::vector<FlagSpec> specs = {
      {"kubeconfig", false, "FILE",
       "kubeconfig (default $KUBECONFIG, else the in-cluster service account)"},
      {"context", false, "NAME", "kubeconfig context (default: current)"},
      {"prometheus", false, "URL",
       "Prometheus base URL (default http://prometheus:9090)"},
      {"tick", false, "DURATION", "how often every endpoint is decided (2s)"},
      {"rate-window", false, "DURATION",
       "rate() window of the metric presets, >= 4 scrape intervals (1m)"},
      {"listen", false, "HOST:PORT",
       "/metrics, /healthz, /readyz (0.0.0.0:8080; port 0: any)"},
      {"grpc-listen", false, "HOST:PORT",
       "the activators' demand stream, gRPC (0.0.0.0:9090; \"\": none)"},
      {"activator-grace", false, "DURATION",
       "after start, wait this long for activators before trusting their "
       "demand (10s)"},
      {"qps", false, "N", "API requests per second, sustained (50)"},
      {"burst", false, "N", "API requests in a burst (100)"},
      {"workers", false, "N", "endpoints reconciled in parallel (2)"},
      {"no-leader-election", true, "",
       "act without a Lease (only ever run one such controller)"},
      {"lease-namespace", false, "NS",
       "the Lease's namespace (pilotlight-system)"},
      {"lease-name", false, "NAME", "the Lease (pilotlight-controller)"},
      {"identity", false, "ID", "this controller in the Lease (host_random)"},
      {"lease-duration", false, "DURATION", "leader election lease (15s)"},
      {"renew-deadline", false, "DURATION", "leader gives up after (10s)"},
      {"retry-period", false, "DURATION", "acquire/renew every (2s)"},
      {"stable-window", false, "DURATION", "policy: stable window (60s)"},
      {"panic-window", false, "DURATION", "policy: panic window (6s)"},
      {"scale-down-stabilization", false, "DURATION",
       "policy: scale-down stabilisation (60s)"},
      {"scale-to-zero-grace", false, "DURATION",
       "policy: shortest keep-alive before zero (30s)"},
      {"stale-after", false, "DURATION",
       "policy: demand older than this holds replicas (30s)"},
      {"billing-granularity", false, "DURATION",
       "policy: how the GPUs are billed (1s); from 5m up, a replica is "
       "released only in the last minute of a paid period"},
      {"policy", false, "NAME",
       "pilotlight (default), or knative: replicas from the simulator's "
       "knative baseline (Knative's KPA), to check its simulated figures "
       "live; not for production"},
      {"decision-log", false, "FILE.jsonl",
       "append each decision with the demand and replicas it was made on, "
       "one JSON line (as `pilotlight simulate --decision-log`; for "
       "debugging and live-vs-simulated replays: a line a tick per endpoint)"},
      {"help", true, "", "show this help"},
  };
  ParsedFlags flags;
  if (std::optional<int> exit = ParseFlagsOrExit(
          args, specs,
          "usage: pilotlight controller [flags]\n\n"
          "Runs the operator: watches InferenceAutoscalers, GPUClasses,\n"
          "Deployments and Pods, reads demand from Prometheus and from the\n"
          "activators (gRPC), and patches replicas through /scale. Logs are\n"
          "JSON lines on stderr.\n\n",
          out, err, flags)) {
    return *exit;
  }
  runtime::ControllerOptions o;
  absl::StatusOr<kube::KubeConfig> kc = KubeConfigFromFlags(flags);
  if (!kc.ok()) {
    err << "pilotlight controller: " << kc.status().message() << "\n";
    return kExitUsage;
  }
  o.kube = *kc;
  o.prometheus_url = flags.String("prometheus").value_or(o.prometheus_url);
  o.listen_address = flags.String("listen").value_or(o.listen_address);
  o.grpc_address = flags.String("grpc-listen").value_or(o.grpc_address);
  o.leader_elect = !flags.Bool("no-leader-election");
  if (const std::string p = flags.String("policy").value_or("pilotlight");
      p == "knative") {
    o.policy = runtime::ReplicaPolicy::kKnative;
  } else if (p != "pilotlight") {
    err << "pilotlight controller: --policy " << p
        << ": want pilotlight or knative\n";
    return kExitUsage;
  }
  auto decision_log = std::make_shared<std::ofstream>();
  if (const std::optional<std::string> path = flags.String("decision-log")) {
    decision_log->open(*path, std::ios::app);
    if (!*decision_log) {
      err << "pilotlight controller: cannot write " << *path << "\n";
      return kExitUsage;
    }
    auto mu = std::make_shared<std::mutex>();
    o.decision_log = [decision_log, mu](const std::string& line) {
      const std::lock_guard<std::mutex> lock(*mu);
      *decision_log << line << "\n" << std::flush;
    };
  }
  o.election.lease_namespace =
      flags.String("lease-namespace").value_or(o.election.lease_namespace);
  o.election.lease_name =
      flags.String("lease-name").value_or(o.election.lease_name);
  o.election.identity = flags.String("identity").value_or(DefaultIdentity());
  for (const absl::Status& st :
       {Set(flags.Duration("tick"), o.tick),
        Set(flags.Duration("rate-window"), o.rate_window),
        Set(flags.Double("qps"), o.qps), Set(flags.Int("burst"), o.burst),
        Set(flags.Int("workers"), o.workers),
        Set(flags.Duration("activator-grace"), o.activator_startup_grace),
        Set(flags.Duration("lease-duration"), o.election.lease_duration),
        Set(flags.Duration("renew-deadline"), o.election.renew_deadline),
        Set(flags.Duration("retry-period"), o.election.retry_period),
        Set(flags.Duration("stable-window"), o.decider.stable_window),
        Set(flags.Duration("panic-window"), o.decider.panic_window),
        Set(flags.Duration("scale-down-stabilization"),
            o.decider.scale_down_stabilization),
        Set(flags.Duration("scale-to-zero-grace"),
            o.decider.scale_to_zero_grace),
        Set(flags.Duration("stale-after"), o.decider.stale_after),
        Set(flags.Duration("billing-granularity"),
            o.decider.billing_granularity)}) {
    if (!st.ok()) {
      err << "pilotlight controller: " << st.message() << "\n";
      return kExitUsage;
    }
  }
  if (o.tick <= absl::ZeroDuration()) {
    err << "pilotlight controller: --tick must be positive\n";
    return kExitUsage;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  runtime::RealClock clock;
  runtime::Controller controller(o, clock);
  const absl::Status st = controller.Run(stop_requested);
  if (!st.ok()) {
    err << "pilotlight controller: " << st.message() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace pilotlight::cmd
