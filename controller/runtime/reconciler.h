// Reconciler: one endpoint's reconcile, as a function of what the caches
// hold, the demand, and the clock:
//
//   1. the spec, parsed against the GPUClasses it names (once per change);
//      a bad spec or a missing GPUClass or Deployment -> Ready=False
//      naming the field, no patches
//   2. observe each variant: replicas, learned cold starts, spot health,
//      whether its pool has a free node (observe.h)
//   3. demand (DemandSource), one decision per demand epoch (policy::Decider)
//   4. act: patch /scale of the variants that differ, with an Event each
//   5. status: conditions and what was decided, written as a merge patch
//      only when it changed (endpoint_status.h)
//
// Its edges are interfaces (kube::ObjectCache, cluster::ClusterIndex,
// DemandSource, Writers, kube::Clock), so tests drive it with fakes and
// explicit times; controller.cc wires it to informers, Prometheus and the API
// server.
//
// Thread-safety: Reconcile may run on several workers at once for
// different keys (the work queue never hands one key to two workers).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "controller/cluster/cluster_index.h"
#include "controller/kube/clock.h"
#include "controller/kube/informer.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/decision.h"
#include "controller/runtime/demand_source.h"
#include "controller/runtime/gpu_class_cache.h"
#include "controller/runtime/metrics.h"
#include "controller/runtime/pool_sizing.h"
#include "controller/runtime/writers.h"

namespace pilotlight::runtime {

struct ReconcilerInputs {
  const kube::ObjectCache& autoscalers;
  const kube::ObjectCache& deployments;
  const kube::ObjectCache& pods;
  const cluster::ClusterIndex& index;
  GpuClassCache& gpu_classes;
  DemandSource& demand;
};

// Which policy sets the replicas. kKnative runs Knative's scaling loop
// (policy::KnativeAutoscaler, the simulator's `knative` baseline) on the
// same demand, so a live replay checks the baseline's simulated figures;
// the decider still runs beside it for the status. Not for production.
enum class ReplicaPolicy { kPilotlight, kKnative };

// On an InferenceAutoscaler, "keda": a KEDA ScaledObject scales its
// Deployments on Pilotlight's decisions (api::KedaScaler), so the
// controller decides and reports but writes no replicas (docs/keda.md).
inline constexpr char kScaledByAnnotation[] = "pilotlight.dev/scaled-by";

class CounterfactualReplayer;
struct Counterfactual;
class PoolEngines;

class Reconciler {
 public:
  Reconciler(policy::DeciderConfig config, ReconcilerInputs in,
             const kube::Clock& clock, Metrics& metrics,
             ReplicaPolicy policy = ReplicaPolicy::kPilotlight);
  ~Reconciler();

  // Reconciles endpoint `key` ("namespace/name"). Only a leader writes
  // (`leading`); a standby keeps its deciders and learners warm. An error is
  // a failed write: nothing after it was done, retry with back-off.
  absl::Status Reconcile(const std::string& key, Writers& w, bool leading);

  // Each decision, with the demand and replicas it was made on, as a
  // policy::DecisionRecord line (times from the Unix epoch); called from
  // the reconciling thread. Set before the first Reconcile.
  void set_decision_log(std::function<void(const std::string&)> log) {
    decision_log_ = std::move(log);
  }

  // Replays each endpoint's recorded traffic through other policies every
  // replayer->options().every, on the leader (status.counterfactual). Set
  // before the first Reconcile; null: none.
  void set_counterfactuals(CounterfactualReplayer* replayer) {
    counterfactuals_ = replayer;
  }

  // Sees and steers endpoints' engines in their sleep pools
  // (spec.sleepPool; pool_engines.h). Set before the first Reconcile;
  // null: pools are not used (each endpoint scales its own replicas).
  void set_pool_engines(PoolEngines* engines) { pool_engines_ = engines; }

  // The endpoint's last decision (unset before the first).
  std::optional<policy::Decision> LastDecision(const std::string& key) const;

 private:
  struct Endpoint;
  struct Observed;
  Endpoint& Slot(const std::string& key);
  void Forget(const std::string& key);
  void ParseSpec(Endpoint& e, const nlohmann::json& ia);
  std::vector<kube::ObjectCache::ObjectPtr> FindDeployments(
      Endpoint& e, const std::string& ns, std::string& reason,
      std::string& message);
  absl::Status NotReady(Endpoint& e, const nlohmann::json& ia,
                        const std::string& reason, const std::string& message,
                        Writers& w, bool leading, absl::Time now);
  Observed Observe(Endpoint& e,
                   const std::vector<kube::ObjectCache::ObjectPtr>& deps,
                   absl::Time now);
  const policy::Decision& DecideOnce(Endpoint& e, Observed& o,
                                     int64_t generation, absl::Time now);
  absl::Status Act(const Endpoint& e, const policy::Decision& d,
                   const Observed& o, Writers& w, std::string& scaled);
  void SpareBusyPods(const Endpoint& e, const std::vector<std::string>& pods,
                     Writers& w);
  absl::Status Publish(Endpoint& e, const policy::Decision& d,
                       const Observed& o, const std::string& scaled, Writers& w,
                       bool leading, absl::Time now);
  void SubmitCounterfactual(Endpoint& e, const Observed& o, absl::Time now);
  void ObservePool(Endpoint& e, Observed& o, absl::Time now);
  bool WakeStalled(Endpoint& e, const Observed& o, bool at_zero,
                   absl::Time now);
  void SizePool(Endpoint& e, Observed& o, const policy::Decision& d,
                absl::Time now);
  absl::Status ScalePool(const Endpoint& e, const Observed& o, Writers& w,
                         std::string& scaled);
  void UpdateGauges(Endpoint& e, const std::vector<int>& desired,
                    const Observed& o, const policy::Decision& d);
  void RemoveGauges(Endpoint& e);
  void PublishCounterfactual(Endpoint& e,
                             const std::optional<Counterfactual>& cf,
                             Writers& w, bool leading);

  const policy::Decision& Knative(Endpoint& e, const Observed& o,
                                  absl::Time now);

  const policy::DeciderConfig config_;
  const ReplicaPolicy policy_;
  const ReconcilerInputs in_;
  const kube::Clock& clock_;
  Metrics& metrics_;
  std::function<void(const std::string&)> decision_log_;
  CounterfactualReplayer* counterfactuals_ = nullptr;
  PoolEngines* pool_engines_ = nullptr;
  PoolSizing pool_sizing_;  // the pools that opt in (pool_sizing.h)
  mutable std::mutex mu_;   // the map; each Endpoint is its worker's
  std::map<std::string, std::unique_ptr<Endpoint>> endpoints_;
};

}  // namespace pilotlight::runtime
