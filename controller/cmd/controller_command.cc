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
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/base/exit_codes.h"
#include "controller/cluster/pod_facts.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/inputs.h"
#include "controller/kube/kube_config.h"
#include "controller/process/real_clock.h"
#include "controller/runtime/controller.h"

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

// What the flags set: straight into the options.
struct ControllerArgs {
  runtime::ControllerOptions o;
  std::optional<std::string> identity;
  KubeInput kube;
  bool no_leader_election = false;
  std::optional<std::string> decision_log;
};

// The policy's tunables the controller exposes (DeciderConfig).
void DeclarePolicy(FlagSet& f, ControllerArgs& a) {
  policy::DeciderConfig& d = a.o.decider;
  f.Add("stable-window", &d.stable_window, "DURATION", "policy: stable window")
      .Add("panic-window", &d.panic_window, "DURATION", "policy: panic window")
      .Add("scale-down-stabilization", &d.scale_down_stabilization, "DURATION",
           "policy: scale-down stabilisation")
      .Add("scale-to-zero-grace", &d.scale_to_zero_grace, "DURATION",
           "policy: shortest keep-alive before zero")
      .Add("stale-after", &d.stale_after, "DURATION",
           "policy: demand older than this holds replicas")
      .Add("billing-granularity", &d.billing_granularity, "DURATION",
           "policy: how the GPUs are billed; from 5m up, a replica is "
           "released only in the last minute of a paid period")
      .Custom("policy", "NAME",
              "pilotlight, or knative: replicas from the simulator's knative "
              "baseline (Knative's KPA), to check its simulated figures "
              "live; not for production",
              "pilotlight",
              [&a](const std::string& p) {
                if (p == "knative") {
                  a.o.policy = runtime::ReplicaPolicy::kKnative;
                } else if (p != "pilotlight") {
                  return absl::InvalidArgumentError(absl::StrCat(
                      "--policy ", p, ": want pilotlight or knative"));
                }
                return absl::OkStatus();
              })
      .Add("counterfactual-every", &a.o.counterfactual_every, "DURATION",
           "replay each endpoint's recorded traffic through pilotlight and "
           "the simple policies this often, off the tick path "
           "(status.counterfactual, `pilotlight explain`; 0: never)")
      .Add("counterfactual-cpu", &a.o.counterfactual_cpu, "CORES",
           "the replays' CPU, on average, of one thread (0.01-1)")
      .Add("decision-log", &a.decision_log, "FILE.jsonl",
           "append each decision with the demand and replicas it was made "
           "on, one JSON line (as `pilotlight simulate --decision-log`; for "
           "debugging and live-vs-simulated replays: a line a tick per "
           "endpoint)");
}

FlagSet ControllerFlags(ControllerArgs& a) {
  runtime::ControllerOptions& o = a.o;
  FlagSet f("pilotlight controller",
            "usage: pilotlight controller [flags]\n\n"
            "Runs the operator: watches InferenceAutoscalers, GPUClasses,\n"
            "Deployments and Pods, reads demand from Prometheus and from the\n"
            "activators (gRPC), and patches replicas through /scale. Logs "
            "are\nJSON lines on stderr.\n\n");
  a.kube.Declare(f);
  f.Add("prometheus", &o.prometheus_url, "URL", "Prometheus base URL")
      .Add("tick", &o.tick, "DURATION", "how often every endpoint is decided")
      .Add("rate-window", &o.rate_window, "DURATION",
           "rate() window of the metric presets, >= 4 scrape intervals")
      .Add("listen", &o.listen_address, "HOST:PORT",
           "/metrics, /healthz, /readyz (port 0: any)")
      .Add("grpc-listen", &o.grpc_address, "HOST:PORT",
           "the activators' demand stream, gRPC (\"\": none)")
      .Add("activator-grace", &o.activator_startup_grace, "DURATION",
           "after start, wait this long for activators before trusting "
           "their demand")
      .Add("qps", &o.qps, "N", "API requests per second, sustained")
      .Add("burst", &o.burst, "N", "API requests in a burst")
      .Add("workers", &o.workers, "N", "endpoints reconciled in parallel")
      .Custom("notice-taints", "KEY[,KEY...]",
              "node taints that announce the node's end whatever their "
              "effect (also: any NoExecute taint a pod does not tolerate for "
              "ever); its pods are replaced at once and leave when the "
              "replacements are Ready (\"\": only NoExecute)",
              absl::StrJoin(cluster::DefaultNoticeTaints(), ","),
              [&o](const std::string& keys) {
                o.notice_taints = absl::StrSplit(keys, ',', absl::SkipEmpty());
                return absl::OkStatus();
              })
      .Switch("no-leader-election", &a.no_leader_election,
              "act without a Lease (only ever run one such controller)")
      .Add("lease-namespace", &o.election.lease_namespace, "NS",
           "the Lease's namespace")
      .Add("lease-name", &o.election.lease_name, "NAME", "the Lease")
      .Add("identity", &a.identity, "ID",
           "this controller in the Lease (default: the host name and a "
           "random suffix)")
      .Add("lease-duration", &o.election.lease_duration, "DURATION",
           "leader election lease")
      .Add("renew-deadline", &o.election.renew_deadline, "DURATION",
           "leader gives up after")
      .Add("retry-period", &o.election.retry_period, "DURATION",
           "acquire/renew every");
  DeclarePolicy(f, a);
  return f;
}

// --decision-log FILE: each decision appended as a line, flushed.
absl::Status OpenDecisionLog(const std::string& path,
                             runtime::ControllerOptions& o) {
  auto file = std::make_shared<std::ofstream>(path, std::ios::app);
  if (!*file) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", path));
  }
  auto mu = std::make_shared<std::mutex>();
  o.decision_log = [file, mu](const std::string& line) {
    const std::lock_guard<std::mutex> lock(*mu);
    *file << line << "\n" << std::flush;
  };
  return absl::OkStatus();
}

}  // namespace

int RunController(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err) {
  ControllerArgs a;
  FlagSet flags = ControllerFlags(a);
  if (std::optional<int> exit = flags.ParseOrExit(args, out, err)) {
    return *exit;
  }
  const auto fail = [&](const absl::Status& st) {
    err << "pilotlight controller: " << st.message() << "\n";
    return kExitUsage;
  };
  runtime::ControllerOptions& o = a.o;
  absl::StatusOr<kube::KubeConfig> kc = a.kube.Load();
  if (!kc.ok()) {
    return fail(kc.status());
  }
  o.kube = *kc;
  o.leader_elect = !a.no_leader_election;
  o.election.identity = a.identity.value_or(DefaultIdentity());
  if (a.decision_log) {
    if (absl::Status st = OpenDecisionLog(*a.decision_log, o); !st.ok()) {
      return fail(st);
    }
  }
  if (o.tick <= absl::ZeroDuration()) {
    return fail(absl::InvalidArgumentError("--tick must be positive"));
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  process::RealClock clock;
  runtime::Controller controller(o, clock);
  if (const absl::Status st = controller.Run(stop_requested); !st.ok()) {
    return fail(st);
  }
  return kExitOk;
}

}  // namespace pilotlight::cmd
