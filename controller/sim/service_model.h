// ServiceModel: how one variant's replicas serve in a replay -- sequences
// per replica at the TPOT SLO, the TPOT table by batch, GPUs, price and cold
// start -- built from the sizing model as the decider builds its own
// (policy::DeriveVariant).
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/model/sizing.h"
#include "controller/sim/sim_config.h"

namespace pilotlight::sim {

// The per-replica service model of one variant, from the sizing model.
struct ServiceModel {
  int slots = 1;               // sequences per replica at the TPOT SLO
  std::vector<double> tpot_s;  // [b] for b = 1..slots
  std::optional<model::ReplicaModel> replica;
  double gpus = 1;
  double price_per_hour = 0;  // per replica
  absl::Duration cold_start;
};

// Builds each variant's service model (slots, TPOT table, price, cold start).
absl::StatusOr<std::vector<ServiceModel>> BuildServiceModels(
    const SimConfig& config, bool trace_has_service_times);

}  // namespace pilotlight::sim
