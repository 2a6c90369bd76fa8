// VariantModel: what one variant of an endpoint is worth, derived once from
// the spec and the catalog -- its replica's sizing model, price per replica
// hour, cold start before any is measured, the node provisioning a cold
// start adds when the pool has no free GPU, its concurrency at the TPOT SLO
// and its unloaded TTFT. Every driver derives it here (the decider, the
// simulator's service models, the custom-resource checks in api/), so the
// three cannot drift apart.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/model/sizing.h"
#include "controller/model/sleep.h"
#include "controller/policy/endpoint_spec.h"

namespace pilotlight::policy {

struct VariantModel {
  model::ReplicaModel replica;
  double price_per_replica_hour = 0;  // gpus x the class's price (its type)
  absl::Duration cold_start;          // the model's, with a node free
  absl::Duration node_provisioning;   // added when no node of the pool is free
  // Concurrent sequences per replica at the TPOT SLO (the spec's
  // concurrencyPerReplica when set); 0 when the SLO cannot be met.
  int capacity = 0;
  double ttft_s = 0;  // unloaded, at the workload's prompt length
};

// Variant `i` of `spec`. NotFound when its class is not in `catalog`.
absl::StatusOr<VariantModel> DeriveVariant(const EndpointSpec& spec, size_t i,
                                           const model::Catalog& catalog,
                                           const model::EngineTuning& tuning);

// The shared pool of class `gpu_class` the endpoint's engines sleep in:
// the sleep model's wake time and an engine's share of a pool GPU, each
// engine on as many GPUs as a replica of the first variant. NotFound for
// a class not in `catalog`; FailedPrecondition when the class's nodes
// cannot hold the weights asleep (`what` names the setting in the
// message: "--sleep-pool", "spec.sleepPool").
absl::StatusOr<model::SleepEstimate> PoolSleep(const EndpointSpec& spec,
                                               const model::Catalog& catalog,
                                               const std::string& gpu_class,
                                               const char* what);

}  // namespace pilotlight::policy
