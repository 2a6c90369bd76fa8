// The reconciler's state between reconciles (per endpoint) and one
// reconcile's view of the variants: shared by its stages, which live in
// reconciler.cc (spec, observe, decide, publish) and reconciler_act.cc
// (act: the /scale patches, deletion costs, the knative loop). Internal to
// controller/runtime.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/api/resources.h"
#include "controller/model/catalog.h"
#include "controller/model/sleep.h"
#include "controller/policy/decider.h"
#include "controller/policy/knative_autoscaler.h"
#include "controller/runtime/endpoint_status.h"
#include "controller/runtime/observe.h"
#include "controller/runtime/reconciler.h"
#include "controller/sim/traffic_record.h"
#include "prometheus/gauge.h"

namespace pilotlight::runtime {

// What the reconciler keeps per endpoint between reconciles.
struct Reconciler::Endpoint {
  explicit Endpoint(const policy::DeciderConfig& c) : decider(c) {}
  policy::Decider decider;
  std::vector<policy::DemandSample> pending;  // since the last decision
  int64_t demand_epoch = -1;
  std::map<std::string, ColdStartLearner> cold_start;  // per deployment
  std::vector<std::string> deployments;                // "ns/name"
  EventSubject subject;
  std::string parsed_version;  // resourceVersion + GPUClasses generation
  absl::StatusOr<api::AutoscalerResource> parsed =
      absl::UnknownError("not parsed");
  std::vector<api::GpuClassResource> classes;  // per variant
  // Of the parsed spec's classes; shared with the counterfactual replays.
  std::shared_ptr<const model::Catalog> catalog;
  std::optional<policy::Decision> decision;  // the last one
  int64_t decided_generation = -1;
  // ReplicaPolicy::kKnative: its loop, the newest demand, when its next
  // tick is due, and the decision with its replicas.
  std::optional<policy::KnativeAutoscaler> knative;
  policy::DemandSample last_sample;
  absl::Time knative_due = absl::InfinitePast();
  std::optional<policy::Decision> knative_decision;
  std::string missing;  // what the last demand read lacked
  // The arrivals each demand read counted, for replaying the endpoint's
  // own traffic: a read without them, or a partial one, is not a look, so
  // a stretch of them is a gap (status.trafficHistory).
  sim::TrafficRecord record;
  // The Ready replicas a replay of the record starts from, and when the
  // next replay is due.
  sim::ReplicaHistory replicas;
  absl::Time next_counterfactual = absl::InfinitePast();
  // spec.sleepPool's wake time and share of a pool GPU (the policy's
  // SleepState), or why its engines cannot sleep there.
  absl::StatusOr<model::SleepEstimate> pool_sleep =
      absl::FailedPreconditionError("no sleepPool");
  // At zero with requests and its engines all asleep: since when (a wake
  // under way), InfiniteFuture when not. Past a lead of it
  // (Reconciler::WakeStalled), its own replicas serve from zero until one
  // is Ready (`wake_stalled`) -- past two wakes and the TTFT SLO instead
  // when the activators report the wake refused (`wake_refused`).
  absl::Time wake_pending_since = absl::InfiniteFuture();
  bool wake_stalled = false;
  bool wake_refused = false;
  // The cheaper candidate the last Event named ("": none).
  std::string cheaper_announced;
  EndpointStatus status;
  std::optional<EndpointStatus> written;  // the status last written
  // Its series, per variant (desired, ready) and per endpoint; made on the
  // first publish, replaced when ParseSpec sees their labels change.
  struct Gauges {
    std::vector<std::pair<prometheus::Gauge*, prometheus::Gauge*>> variants;
    prometheus::Gauge* cost = nullptr;
    prometheus::Gauge* always_on = nullptr;
    prometheus::Gauge* demand = nullptr;
    prometheus::Gauge* capacity = nullptr;
    prometheus::Gauge* calibration = nullptr;
    prometheus::Gauge* warm_pool = nullptr;
    prometheus::Gauge* keep_alive = nullptr;
    prometheus::Gauge* slo = nullptr;
    prometheus::Gauge* spot_fallback = nullptr;
    // NaN until a replay's table.
    prometheus::Gauge* cf_running = nullptr;
    prometheus::Gauge* cf_cheapest = nullptr;
    // pilotlight_serving_state, in the order of kServingStates; the pool's
    // engines awake and asleep, and its pods busy and free.
    std::vector<prometheus::Gauge*> serving;
    prometheus::Gauge* pool_awake = nullptr;
    prometheus::Gauge* pool_asleep = nullptr;
    prometheus::Gauge* pool_pods_busy = nullptr;
    prometheus::Gauge* pool_pods_free = nullptr;
    prometheus::Gauge* pool_sized = nullptr;
  };
  std::optional<Gauges> gauges;
};

// One reconcile's view of the variants.
struct Reconciler::Observed {
  policy::Snapshot snap;
  std::vector<std::string> ready_pods;                 // of every variant
  std::vector<std::vector<std::string>> variant_pods;  // ready, per variant
  std::vector<kube::ObjectCache::ObjectPtr> pods;      // every variant's
  std::vector<int32_t> replicas;  // per variant, its Deployment's
  std::vector<int32_t> leaving;   // per variant
  std::vector<LeavingPod> leaving_pods;
  // Its engines in spec.sleepPool (pool_engines.h), when the pool is used.
  bool pool = false;
  std::vector<std::string> pool_awake;
  std::vector<std::string> pool_asleep;
  // Its own Ready pods, every variant (before the pool's engines awake are
  // counted as ready at zero).
  int32_t own_ready = 0;
  // Its pool Deployment ("namespace/name"; "" without a pool to use), its
  // Ready pods (keys), whether each has an engine awake (any endpoint's),
  // and the size the pool's rule gives it (when the Deployment opts in).
  std::string pool_deployment;
  std::vector<std::string> pool_pods;
  std::vector<bool> pool_pod_busy;
  std::optional<policy::PoolSize> pool_size;
};

}  // namespace pilotlight::runtime
