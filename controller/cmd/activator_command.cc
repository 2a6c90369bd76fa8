#include "controller/cmd/activator_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/activator/activator.h"
#include "controller/base/exit_codes.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/inputs.h"

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

// What the flags set: straight into the options where the types match.
struct ActivatorArgs {
  ActivatorArgs() {
    if (const char* ns = std::getenv("POD_NAMESPACE"); ns != nullptr && *ns) {
      o.controller_namespace = ns;
    }
    o.reporter.name = DefaultName();
  }
  activator::ActivatorOptions o;
  KubeInput kube;
  std::optional<std::string> controllers;
  int max_body = static_cast<int>(o.proxy.max_body_bytes);
  int held_bytes = static_cast<int>(o.hold.max_held_bytes_per_endpoint);
  int held_bytes_total = static_cast<int>(o.hold.max_held_bytes_total);
};

void DeclareLimits(FlagSet& f, ActivatorArgs& a) {
  activator::ActivatorOptions& o = a.o;
  f.Add("max-held", &o.hold.max_held_per_endpoint, "N",
        "requests held per endpoint")
      .Add("max-held-bytes", &a.held_bytes, "N",
           "request bytes held per endpoint")
      .Add("max-held-total", &o.hold.max_held_total, "N",
           "requests held in all (below --max-connections)")
      .Add("max-held-bytes-total", &a.held_bytes_total, "N",
           "request bytes held in all")
      .Add("unknown-endpoint-wait", &o.hold.unknown_endpoint_wait, "DURATION",
           "a request naming an endpoint not seen yet waits this long for "
           "the watch to show it before its 404 (0: answer at once)")
      .Add("max-body-bytes", &a.max_body, "N", "largest request body")
      .Add("max-connections", &o.http.max_threads, "N",
           "connections served at once, one thread each")
      .Add("backlog", &o.http.backlog, "N", "listen backlog of the proxy")
      .Add("upstream-keepalive", &o.proxy.upstream.idle, "DURATION",
           "how long an idle connection to a pod is kept for the next "
           "request (below the model server's own idle timeout, uvicorn's "
           "5s; 0: a new connection per request)")
      .Add("activation-timeout", &o.targets.timeouts.activation, "DURATION",
           "hold limit before the controller has predicted a cold start; "
           "then 1.5 x the prediction + 30s, at most 20m")
      .Add("response-start-timeout", &o.targets.timeouts.forward.response_start,
           "DURATION", "a pod's first byte after it took the request")
      .Add("idle-timeout", &o.targets.timeouts.forward.idle, "DURATION",
           "between streamed chunks")
      .Add("total-timeout", &o.targets.timeouts.forward.total, "DURATION",
           "one response in all")
      .Add("default-concurrency", &o.targets.default_concurrency, "N",
           "requests per pod at once until the controller publishes "
           "concurrencyPerReplica")
      .Add("drain-delay", &o.drain_delay, "DURATION",
           "after SIGTERM, unready but serving for")
      .Add("drain-timeout", &o.drain_timeout, "DURATION",
           "then finish held requests and streams for at most");
}

FlagSet ActivatorFlags(ActivatorArgs& a) {
  activator::ActivatorOptions& o = a.o;
  FlagSet f(
      "pilotlight activator",
      "usage: pilotlight activator [flags]\n\n"
      "Runs the activator: an OpenAI-compatible proxy in front of every\n"
      "InferenceAutoscaler that holds requests while an endpoint has no\n"
      "ready replica, tells the controllers at once (gRPC), and forwards\n"
      "them when the model answers. Logs are JSON lines on stderr.\n\n");
  a.kube.Declare(f);
  f.Add("controller", &a.controllers, "HOST:PORT[,...]",
        "every controller replica's gRPC demand service (default: found by "
        "--controller-selector)")
      .Add("controller-selector", &o.controller_selector, "K=V[,...]",
           "labels of the controller's pods")
      .Add("controller-namespace", &o.controller_namespace, "NS",
           "their namespace ($POD_NAMESPACE when set)")
      .Add("controller-port", &o.controller_port, "N", "their gRPC port")
      .Add("name", &o.reporter.name, "NAME",
           "this activator in demand reports ($POD_NAME when set, else the "
           "host name)")
      .Add("listen", &o.listen_address, "HOST:PORT",
           "the proxy: /<namespace>/<name>/v1/... (port 0: any)")
      .Add("admin-listen", &o.admin_address, "HOST:PORT",
           "/metrics, /healthz, /readyz (port 0: any)")
      .Add("report-interval", &o.reporter.interval, "DURATION",
           "full demand report to the controllers every");
  DeclareLimits(f, a);
  return f;
}

// Every bound the flags' values must keep.
absl::Status CheckLimits(const ActivatorArgs& a) {
  const activator::ActivatorOptions& o = a.o;
  if (a.max_body <= 0 || a.held_bytes <= 0 || a.held_bytes_total <= 0 ||
      o.hold.max_held_per_endpoint < 0 || o.hold.max_held_total < 0 ||
      o.http.max_threads < 1 || o.http.backlog < 1 ||
      o.targets.default_concurrency < 1) {
    return absl::InvalidArgumentError("limits must be positive");
  }
  if (o.hold.unknown_endpoint_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--unknown-endpoint-wait must not be negative (0: answer at once)");
  }
  if (o.proxy.upstream.idle < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--upstream-keepalive must not be negative (0: a new connection to "
        "the pod per request)");
  }
  if (o.hold.max_held_total >= o.http.max_threads) {
    // Each held request keeps its connection's thread: at the thread limit
    // the overflow would wait unread -- no 429, no poke -- and traffic to
    // warm endpoints would find no thread.
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-held-total (", o.hold.max_held_total,
        ") must be below --max-connections (", o.http.max_threads,
        "): a held request keeps a connection thread, and forwarding needs "
        "threads of its own"));
  }
  if (o.reporter.controllers.empty() && o.controller_selector.empty()) {
    return absl::InvalidArgumentError(
        "give --controller or --controller-selector");
  }
  return absl::OkStatus();
}

}  // namespace

int RunActivator(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err) {
  ActivatorArgs a;
  FlagSet flags = ActivatorFlags(a);
  if (std::optional<int> exit = flags.ParseOrExit(args, out, err)) {
    return *exit;
  }
  const auto fail = [&](const absl::Status& st) {
    err << "pilotlight activator: " << st.message() << "\n";
    return kExitUsage;
  };
  activator::ActivatorOptions& o = a.o;
  o.reporter.controllers =
      absl::StrSplit(a.controllers.value_or(""), ',', absl::SkipEmpty());
  if (absl::Status st = CheckLimits(a); !st.ok()) {
    return fail(st);
  }
  // After the flags: a wrong flag is told before a missing cluster.
  absl::StatusOr<kube::KubeConfig> kc = a.kube.Load();
  if (!kc.ok()) {
    return fail(kc.status());
  }
  o.kube = *kc;
  o.proxy.max_body_bytes = static_cast<size_t>(a.max_body);
  o.hold.max_held_bytes_per_endpoint = a.held_bytes;
  o.hold.max_held_bytes_total = a.held_bytes_total;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  activator::Activator activator(o);
  if (const absl::Status st = activator.Run(stop_requested); !st.ok()) {
    return fail(st);
  }
  return kExitOk;
}

}  // namespace pilotlight::cmd
