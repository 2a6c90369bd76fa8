// Targets: which pods each endpoint's requests may go to, kept in the
// Router. A pod is a target once the kubelet reports it Ready (so startup
// and readiness probes are respected) AND its model server answers its
// health path -- the container's readinessProbe.httpGet.path, else
// /health -- probed every `probe_interval` with a `probe_timeout`, so the
// first request after 0 -> 1 meets a model that answers, not a port that
// merely opened. A pod is probed until it first answers, then trusted
// until it stops being Ready, is deleted, or refuses a connection (the
// proxy takes it out; it is probed again). A pod the controller marked
// leaving (its node announced its end) gets new requests only while its
// endpoint has no other target; its requests in flight finish.
//
// An endpoint with a spec.sleepPool also has its engine on each of the
// pool Deployment's pods (the pod's IP at the pool's port), probed the
// same way: those are its targets while it has no pod of its own to send
// to. An engine there may sleep (the Waker wakes it), and the engines of
// one pool pod share its GPU (Neighbours: the others of a pod).
//
// Per endpoint it also reads from the InferenceAutoscaler's status what
// the controller decided: the admission cap per pod
// (status.concurrencyPerReplica) and the predicted cold start
// (status.coldStart.leadSeconds), from which the activation timeout comes.
//
// Inputs are caches (InferenceAutoscalers; pods, joined to their
// Deployment by cluster::ClusterIndex) and a probe function, so tests can
// drive it without a cluster.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/activator/proxy.h"
#include "controller/activator/router.h"
#include "controller/cluster/cluster_index.h"
#include "controller/kube/informer.h"
#include "controller/policy/activation.h"

namespace pilotlight::activator {

struct TargetOptions {
  absl::Duration probe_interval = absl::Milliseconds(200);
  absl::Duration probe_timeout = absl::Milliseconds(300);
  // Per-pod cap until the controller has published one.
  int default_concurrency = 32;
  // The activation timeout from the predicted cold start;
  // `timeouts.activation` when the controller has not predicted one yet.
  policy::ActivationRule activation;
  EndpointTimeouts timeouts;
};

// A pod's model server: "ip:port" and the health path; unset fields when
// the pod has no IP yet.
struct PodEndpoint {
  std::string address;
  std::string health_path = "/health";
};
PodEndpoint PodServer(const nlohmann::json& pod);

// The controller replicas to stream demand to: the Ready, not terminating
// pods in `ns` whose labels include every k=v of `selector`, as "ip:port",
// sorted.
std::vector<std::string> ControllerAddresses(const kube::ObjectCache& pods,
                                             const std::string& ns,
                                             const std::string& selector,
                                             int port);

class Targets {
 public:
  // Probe: true when `address` answers GET `path` with 2xx within `timeout`.
  using Probe =
      std::function<bool(const std::string& address, const std::string& path,
                         absl::Duration timeout)>;
  static bool HttpProbe(const std::string& address, const std::string& path,
                        absl::Duration timeout);

  Targets(TargetOptions options, Router& router,
          const kube::ObjectCache& autoscalers, const kube::ObjectCache& pods,
          const cluster::ClusterIndex& index, Probe probe = HttpProbe);

  // An InferenceAutoscaler or one of its pods changed: look again.
  void Changed(const std::string& endpoint);
  void ChangedAll();
  // One pass: refresh what changed, probe pods not yet answering; returns
  // the endpoints whose targets are still incomplete.
  int Refresh();
  // Refresh every probe interval until `stop`.
  void Run(const std::atomic<bool>& stop);

  EndpointTimeouts TimeoutsOf(const std::string& endpoint) const;
  size_t CountOf(const std::string& endpoint) const;
  // The other endpoints' engines on the pool pod that runs the engine at
  // `address` (empty for an address that is no pool engine).
  std::vector<std::string> Neighbours(const std::string& address) const;

 private:
  // A Ready pod of an endpoint, and whether its model answers (trusted
  // from an earlier pass, or this pass's probe).
  struct Candidate {
    std::string uid;
    std::string address;
    std::string health_path;
    bool answered = false;
    // On a node that announced its end (pilotlight.dev/leaving): a target
    // only while the endpoint has no other.
    bool leaving = false;
    // The endpoint's engine on a pool pod: a target while it has no pod
    // of its own to send to.
    bool pool = false;
  };
  struct Plan {
    std::string key;
    bool gone = false;  // the InferenceAutoscaler was deleted
    std::vector<Candidate> pods;
    int concurrency = 1;
  };
  Plan Collect(const std::string& key);
  // Probes each candidate, up to kMaxParallelProbes at once.
  void ProbeAll(const std::vector<Candidate*>& todo);
  // Sets the endpoint's targets; true while one of its pods is pending.
  bool Apply(const Plan& plan);
  // The endpoint's engines on pool pods now: pod uid -> address.
  void SetPoolEnginesLocked(const std::string& endpoint,
                            const std::map<std::string, std::string>& engines);
  static constexpr size_t kMaxParallelProbes = 16;

  const TargetOptions options_;
  Router& router_;
  const kube::ObjectCache& autoscalers_;
  const kube::ObjectCache& pods_;
  const cluster::ClusterIndex& index_;
  const Probe probe_;
  mutable std::mutex mu_;
  std::set<std::string> dirty_;
  bool all_dirty_ = true;
  // Refresh's own (one thread):
  std::set<std::string> known_;
  std::set<std::string> pending_;  // a Ready pod not answering yet
  // Per endpoint, the pods that answered once: uid -> address (trusted
  // while Ready).
  std::map<std::string, std::map<std::string, std::string>> answered_;
  std::map<std::string, size_t> count_;  // under mu_
  // Pool engines, under mu_: each pool pod's (by uid) engines by endpoint,
  // the pod of each engine's address, and the pods each endpoint has an
  // engine on.
  std::map<std::string, std::map<std::string, std::string>> pool_pods_;
  std::map<std::string, std::string> engine_pod_;
  std::map<std::string, std::set<std::string>> endpoint_pool_pods_;
};

}  // namespace pilotlight::activator
