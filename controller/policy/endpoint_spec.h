// EndpointSpec: what the user asked for one serverless endpoint (the policy
// view of an InferenceAutoscaler): the model, the SLO, the mode, the replica
// bounds and the variants (one Deployment each, on one GPU class and one
// capacity type). Plain values; ValidateEndpointSpec checks them against a
// catalog and names the offending field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/model/cold_start.h"
#include "controller/model/model_profile.h"
#include "controller/model/precision.h"
#include "controller/model/sizing.h"

namespace pilotlight::policy {

enum class Mode { kRealtime, kBatch };
enum class CapacityType { kOnDemand, kSpot };

absl::string_view ModeName(Mode m);
absl::string_view CapacityTypeName(CapacityType c);

struct EndpointSlo {
  absl::Duration ttft = absl::Seconds(2);
  absl::Duration tpot = absl::Milliseconds(80);
  // Largest fraction of requests that may meet a cold start (wait for a
  // replica to start). Also the risk the warm pool is sized at.
  double max_cold_start_fraction = 0.01;
  // What one cold start costs the user beyond the GPU time it burns, in
  // USD. Unset: valued at the GPU time of one cold start, so the ski-rental
  // break-even is twice the cold-start time (docs/policy.md).
  std::optional<double> cold_start_penalty_usd;
  // The most the keep-alive may spend per day, in idle GPU time beyond the
  // ski-rental keep-alive, to keep cold starts within the budget above: a
  // sparse endpoint (a few requests a day) meets a 1 % budget only by
  // staying warm most of the day. Unset: no bound (the spend shows in the
  // status either way).
  std::optional<double> max_keep_alive_cost_per_day_usd;
};

struct VariantSpec {
  std::string deployment;
  std::string gpu_class;  // a catalog entry
  CapacityType capacity = CapacityType::kOnDemand;
  int gpus_per_replica = 1;  // the tensor-parallel degree
  // How a new replica of this variant starts before any is measured.
  model::ColdStartAssumptions cold_start;
  // How its GPUs are billed (its GPUClass's billingGranularitySeconds):
  // with periods of 5 min or more no replica is released inside one it has
  // paid for. Unset: the controller's --billing-granularity.
  std::optional<absl::Duration> billing_granularity;
};

struct EndpointSpec {
  std::string name;        // "namespace/name"
  int64_t generation = 0;  // bump on any change; the decider re-derives
  model::ModelProfile model;
  model::Precision weights = model::Precision::kBf16;
  model::Precision kv = model::Precision::kBf16;
  model::Workload workload;  // typical request shape (context, prompt, output)
  EndpointSlo slo;
  Mode mode = Mode::kRealtime;
  // Concurrent requests one replica serves within the SLO. 0: from the
  // sizing model (LLMs); set it for other servers (e.g. 1 for a diffusion
  // pipeline) or from your own load test.
  int32_t concurrency_per_replica = 0;
  int32_t min_replicas = 0;
  int32_t max_replicas = 16;
  std::vector<VariantSpec> variants;
};

// Checks the spec and that every variant's class is in `catalog` and can run
// the model; the error names the field ("variants[1].gpuClass"), the value
// and what is allowed.
absl::Status ValidateEndpointSpec(const EndpointSpec& spec,
                                  const model::Catalog& catalog);

}  // namespace pilotlight::policy
