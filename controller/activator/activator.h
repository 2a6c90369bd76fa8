// Activator: `pilotlight activator`, wired. It watches InferenceAutoscalers,
// ReplicaSets (metadata) and Pods; serves the OpenAI-compatible front
// (Proxy) on one port and /metrics, /healthz, /readyz on another (its own
// threads: held requests and streams never starve health checks); keeps
// each endpoint's targets (Targets, probing model servers every 200 ms);
// and streams demand to every controller replica (DemandReporter), poking
// at once when a request is held for an endpoint with no ready pod. A pod
// whose engine sleeps (vLLM's sleep mode) is woken for the request that
// meets it (Waker).
//
// Stopping (SIGTERM): /readyz fails at once, requests are still served for
// `drain_delay` (the Service stops sending new ones) while kept-alive
// client connections end after their current response (their clients
// reconnect to the other activators), then held requests
// and open streams are finished for up to `drain_timeout`, the controllers
// are told this activator is draining, and it exits.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/activator/demand_reporter.h"
#include "controller/activator/proxy.h"
#include "controller/activator/router.h"
#include "controller/activator/targets.h"
#include "controller/http/http_server.h"
#include "controller/kube/kube_config.h"

namespace pilotlight::activator {

struct ActivatorOptions {
  kube::KubeConfig kube;
  std::string listen_address = "0.0.0.0:8000";  // the proxy
  std::string admin_address = "0.0.0.0:8081";   // metrics and probes
  // The controller replicas: reporter.controllers when given, else the
  // Ready pods labelled `controller_selector` ("k=v[,k=v]") in
  // `controller_namespace`, at `controller_port` -- every replica, found
  // again as they come and go (a new leader gets the demand it needs).
  ReporterOptions reporter;
  std::string controller_selector =
      "app.kubernetes.io/name=pilotlight-controller";
  std::string controller_namespace = "pilotlight-system";
  int controller_port = 9090;
  HoldLimits hold;
  http::HttpServerOptions http;
  ProxyOptions proxy;
  TargetOptions targets;
  absl::Duration drain_delay = absl::Seconds(5);
  absl::Duration drain_timeout = absl::Seconds(30);
};

class Activator {
 public:
  explicit Activator(ActivatorOptions options);
  ~Activator();

  // Serves until `stop`, then drains; errors only for what cannot start.
  absl::Status Run(const std::atomic<bool>& stop);

  // Ports after Run started (for tests); 0 before.
  int port() const { return port_.load(); }
  int admin_port() const { return admin_port_.load(); }

 private:
  class Impl;
  ActivatorOptions options_;
  std::atomic<int> port_{0};
  std::atomic<int> admin_port_{0};
};

}  // namespace pilotlight::activator
