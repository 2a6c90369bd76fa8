// Controller: `pilotlight controller`, the operator's reconcile loop.
// Informers keep InferenceAutoscalers, GPUClasses, Deployments and Pods;
// every tick (2 s by default) one batched read of Prometheus gives demand
// per pod, and the activators stream what they hold over gRPC
// (MergedDemand joins the two); each endpoint is then reconciled from a
// work queue (and at once when its resource, a variant's Deployment or one
// of its pods changes, or when an activator holds requests for it with no
// ready replica -- a poke):
//
//   snapshot (spec, GPUClasses, demand, replicas, cold starts learned from
//   pod condition times)  ->  policy::Decider  ->  /scale patches, Events,
//   status (optimistic concurrency, only when it changed)
//
// Only the leader (a Lease) patches and writes; a standby keeps its caches
// and deciders warm. Failure behaviour: Prometheus unreachable or answering
// garbage -> hold (never scale down), condition Degraded; an invalid
// resource or a missing Deployment/GPUClass -> Ready=False naming the
// field, no patches; a conflicting write -> retried; a dropped watch or a
// restarted API server -> the informers relist. Deleting an
// InferenceAutoscaler leaves its Deployments at their current replicas.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/cluster/pod_facts.h"
#include "controller/kube/clock.h"
#include "controller/kube/kube_config.h"
#include "controller/kube/leader_election.h"
#include "controller/policy/decider_config.h"
#include "controller/runtime/reconciler.h"

namespace pilotlight::runtime {

struct ControllerOptions {
  kube::KubeConfig kube;
  std::string prometheus_url = "http://prometheus:9090";
  absl::Duration prometheus_timeout = absl::Seconds(5);
  absl::Duration tick = absl::Seconds(2);
  // rate() window of the metric presets: at least 4 scrape intervals.
  absl::Duration rate_window = absl::Minutes(1);
  // Client-side throttling of API requests (client-go's QPS/Burst).
  double qps = 50;
  int burst = 100;
  // "host:port" for /metrics, /healthz, /readyz ("" = none).
  std::string listen_address = "0.0.0.0:8080";
  // "host:port" of the gRPC demand service the activators stream to
  // ("" = none; port 0 = any free port).
  std::string grpc_address = "0.0.0.0:9090";
  // After start, and after an activator's stream breaks, the activators'
  // demand is not trusted (no scale-down on it) until they report again,
  // or for at most `activator_forget_after` (a lost activator is then
  // taken as gone).
  absl::Duration activator_startup_grace = absl::Seconds(10);
  absl::Duration activator_forget_after = absl::Minutes(2);
  bool leader_elect = true;
  kube::LeaderElectionConfig election;
  policy::DeciderConfig decider;
  // kKnative: replicas from the knative baseline (for live-vs-simulated
  // replays; docs/replay.md).
  ReplicaPolicy policy = ReplicaPolicy::kPilotlight;
  int workers = 2;
  // Node taints that announce the node's end (cluster::ClusterIndex).
  std::vector<std::string> notice_taints = cluster::DefaultNoticeTaints();
  // Each endpoint's recorded traffic replayed through other policies this
  // often, on one thread within cpu_budget (status.counterfactual;
  // counterfactuals.h). every 0: none.
  absl::Duration counterfactual_every = absl::Minutes(10);
  double counterfactual_cpu = 0.5;
  // Each decision as a policy::DecisionRecord line (--decision-log); called
  // from the worker threads at once, so it must be thread-safe.
  std::function<void(const std::string&)> decision_log;
};

class Controller {
 public:
  Controller(ControllerOptions options, const kube::Clock& clock);
  ~Controller();

  // Runs until `stop`; errors only for what cannot start (bad options, a
  // port in use).
  absl::Status Run(const std::atomic<bool>& stop);

  // The ports /metrics and the gRPC demand service listen on (after Run
  // started; for tests).
  int port() const;
  int grpc_port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pilotlight::runtime
