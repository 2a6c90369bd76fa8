#include "controller/cmd/activator_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <ostream>

#include "absl/strings/str_split.h"
#include "controller/activator/activator.h"
#include "controller/base/exit_codes.h"
#include "controller/cmd/controller_command.h"
#include "controller/cmd/flags.h"

namespace pilotlight::cmd {
namespace {

std::atomic<bool> stop_requested{false};
void OnSignal(int /*sig*/) { stop_requested.store(true); }

std::string DefaultName() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod) {
    return pod;
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    return "activator";
  }
  return host;
}

}  // namespace

int RunActivator(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err) {
  const std::vector<FlagSpec> specs = {
      {"kubeconfig", false, "FILE",
       "kubeconfig (default $KUBECONFIG, else the in-cluster service account)"},
      {"context", false, "NAME", "kubeconfig context (default: current)"},
      {"controller", false, "HOST:PORT[,...]",
       "every controller replica's gRPC demand service (default: found by "
       "--controller-selector)"},
      {"controller-selector", false, "K=V[,...]",
       "labels of the controller's pods "
       "(app.kubernetes.io/name=pilotlight-controller)"},
      {"controller-namespace", false, "NS",
       "their namespace ($POD_NAMESPACE, else pilotlight-system)"},
      {"controller-port", false, "N", "their gRPC port (9090)"},
      {"name", false, "NAME",
       "this activator in demand reports ($POD_NAME, else the host name)"},
      {"listen", false, "HOST:PORT",
       "the proxy: /<namespace>/<name>/v1/... (0.0.0.0:8000; port 0: any)"},
      {"admin-listen", false, "HOST:PORT",
       "/metrics, /healthz, /readyz (0.0.0.0:8081; port 0: any)"},
      {"max-held", false, "N", "requests held per endpoint (1000)"},
      {"max-held-bytes", false, "N",
       "request bytes held per endpoint (67108864)"},
      {"max-held-total", false, "N",
       "requests held in all (3000; below --max-connections)"},
      {"max-held-bytes-total", false, "N",
       "request bytes held in all (268435456)"},
      {"max-body-bytes", false, "N", "largest request body (16777216)"},
      {"max-connections", false, "N",
       "connections served at once, one thread each (4096)"},
      {"backlog", false, "N", "listen backlog of the proxy (4096)"},
      {"upstream-keepalive", false, "DURATION",
       "how long an idle connection to a pod is kept for the next request "
       "(2s; below the model server's own idle timeout, uvicorn's 5s; 0: a "
       "new connection per request)"},
      {"activation-timeout", false, "DURATION",
       "hold limit before the controller has predicted a cold start (5m); "
       "then 1.5 x the prediction + 30s, at most 20m"},
      {"response-start-timeout", false, "DURATION",
       "a pod's first byte after it took the request (5m)"},
      {"idle-timeout", false, "DURATION", "between streamed chunks (1m)"},
      {"total-timeout", false, "DURATION", "one response in all (30m)"},
      {"default-concurrency", false, "N",
       "requests per pod at once until the controller publishes "
       "concurrencyPerReplica (32)"},
      {"report-interval", false, "DURATION",
       "full demand report to the controllers every (1s)"},
      {"drain-delay", false, "DURATION",
       "after SIGTERM, unready but serving for (5s)"},
      {"drain-timeout", false, "DURATION",
       "then finish held requests and streams for at most (30s)"},
      {"help", true, "", "show this help"},
  };
  ParsedFlags flags;
  if (std::optional<int> exit = ParseFlagsOrExit(
          args, specs,
          "usage: pilotlight activator [flags]\n\n"
          "Runs the activator: an OpenAI-compatible proxy in front of every\n"
          "InferenceAutoscaler that holds requests while an endpoint has no\n"
          "ready replica, tells the controllers at once (gRPC), and forwards\n"
          "them when the model answers. Logs are JSON lines on stderr.\n\n",
          out, err, flags)) {
    return *exit;
  }
  activator::ActivatorOptions o;
  o.reporter.controllers = absl::StrSplit(
      flags.String("controller").value_or(""), ',', absl::SkipEmpty());
  o.controller_selector =
      flags.String("controller-selector").value_or(o.controller_selector);
  if (const char* ns = std::getenv("POD_NAMESPACE"); ns != nullptr && *ns) {
    o.controller_namespace = ns;
  }
  o.controller_namespace =
      flags.String("controller-namespace").value_or(o.controller_namespace);
  o.reporter.name = flags.String("name").value_or(DefaultName());
  o.listen_address = flags.String("listen").value_or(o.listen_address);
  o.admin_address = flags.String("admin-listen").value_or(o.admin_address);
  int max_body = static_cast<int>(o.proxy.max_body_bytes);
  int held_bytes = static_cast<int>(o.hold.max_held_bytes_per_endpoint);
  int held_bytes_total = static_cast<int>(o.hold.max_held_bytes_total);
  for (const absl::Status& st :
       {Set(flags.Int("max-held"), o.hold.max_held_per_endpoint),
        Set(flags.Int("max-held-bytes"), held_bytes),
        Set(flags.Int("max-held-total"), o.hold.max_held_total),
        Set(flags.Int("max-held-bytes-total"), held_bytes_total),
        Set(flags.Int("max-body-bytes"), max_body),
        Set(flags.Int("max-connections"), o.http.max_threads),
        Set(flags.Int("backlog"), o.http.backlog),
        Set(flags.Duration("upstream-keepalive"), o.proxy.upstream.idle),
        Set(flags.Duration("activation-timeout"),
            o.targets.timeouts.activation),
        Set(flags.Duration("response-start-timeout"),
            o.targets.timeouts.forward.response_start),
        Set(flags.Duration("idle-timeout"), o.targets.timeouts.forward.idle),
        Set(flags.Duration("total-timeout"), o.targets.timeouts.forward.total),
        Set(flags.Int("default-concurrency"), o.targets.default_concurrency),
        Set(flags.Int("controller-port"), o.controller_port),
        Set(flags.Duration("report-interval"), o.reporter.interval),
        Set(flags.Duration("drain-delay"), o.drain_delay),
        Set(flags.Duration("drain-timeout"), o.drain_timeout)}) {
    if (!st.ok()) {
      err << "pilotlight activator: " << st.message() << "\n";
      return kExitUsage;
    }
  }
  if (max_body <= 0 || held_bytes <= 0 || held_bytes_total <= 0 ||
      o.hold.max_held_per_endpoint < 0 || o.hold.max_held_total < 0 ||
      o.http.max_threads < 1 || o.http.backlog < 1 ||
      o.targets.default_concurrency < 1) {
    err << "pilotlight activator: limits must be positive\n";
    return kExitUsage;
  }
  if (o.proxy.upstream.idle < absl::ZeroDuration()) {
    err << "pilotlight activator: --upstream-keepalive must not be negative "
           "(0: a new connection to the pod per request)\n";
    return kExitUsage;
  }
  if (o.hold.max_held_total >= o.http.max_threads) {
    // Each held request keeps its connection's thread: at the thread limit
    // the overflow would wait unread -- no 429, no poke -- and traffic to
    // warm endpoints would find no thread.
    err << "pilotlight activator: --max-held-total (" << o.hold.max_held_total
        << ") must be below --max-connections (" << o.http.max_threads
        << "): a held request keeps a connection thread, and forwarding "
           "needs threads of its own\n";
    return kExitUsage;
  }
  if (o.reporter.controllers.empty() && o.controller_selector.empty()) {
    err << "pilotlight activator: give --controller or --controller-selector\n";
    return kExitUsage;
  }
  // After the flags: a wrong flag is told before a missing cluster.
  absl::StatusOr<kube::KubeConfig> kc = KubeConfigFromFlags(flags);
  if (!kc.ok()) {
    err << "pilotlight activator: " << kc.status().message() << "\n";
    return kExitUsage;
  }
  o.kube = *kc;
  o.proxy.max_body_bytes = static_cast<size_t>(max_body);
  o.hold.max_held_bytes_per_endpoint = held_bytes;
  o.hold.max_held_bytes_total = held_bytes_total;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  activator::Activator a(o);
  const absl::Status st = a.Run(stop_requested);
  if (!st.ok()) {
    err << "pilotlight activator: " << st.message() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace pilotlight::cmd
