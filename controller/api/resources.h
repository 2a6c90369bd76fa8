// The custom resources (deploy/crds) <-> the domain types: a GPUClass
// object becomes a catalog entry with its capacity type and cold-start
// assumptions; an InferenceAutoscaler becomes the policy's EndpointSpec
// plus how to read its demand. The API server has already applied the
// schema (defaults, CEL rules); these functions still check what the schema
// cannot (a preset that exists, a GPUClass that exists and can run the
// model) and name the field in every error, e.g.
// `spec.variants[1].gpuClass: GPUClass "h100-spot" not found`.
// Pure: no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/model/cold_start.h"
#include "controller/model/gpu_class.h"
#include "controller/policy/endpoint_spec.h"
#include "controller/prom/demand.h"
#include "nlohmann/json.hpp"

namespace pilotlight::api {

struct GpuClassResource {
  // Named like the object; both prices are the object's pricePerGPUHour,
  // so the policy finds it whichever capacity type asks.
  model::GpuClass gpu;
  policy::CapacityType capacity = policy::CapacityType::kOnDemand;
  model::ColdStartAssumptions cold_start;
  std::map<std::string, std::string> node_selector;
  std::optional<absl::Duration>
      billing_granularity;  // billingGranularitySeconds
};

// A GPUClass object (JSON as the API server returns it).
absl::StatusOr<GpuClassResource> ParseGpuClass(const nlohmann::json& object);

// The catalog the policy sees: one entry per GPUClass.
absl::StatusOr<model::Catalog> CatalogOf(
    const std::map<std::string, GpuClassResource>& classes);

// The GPUClass object for a shipped catalog entry on one capacity type,
// named "<entry>-on-demand" / "<entry>-spot", selecting the entry's node
// labels plus karpenter.sh/capacity-type.
nlohmann::json GpuClassObject(const model::GpuClass& entry,
                              policy::CapacityType capacity);

// Every shipped catalog entry as GPUClass objects (spot only where the
// entry has a spot price), as one multi-document YAML text.
std::string DefaultGpuClassesYaml(const model::Catalog& catalog);

struct MetricsSpec {
  prom::MetricsServer server = prom::MetricsServer::kVllm;
  std::string concurrency_query;   // custom only
  std::string arrival_rate_query;  // custom only
};

// spec.sleepPool: a Deployment of pool pods, each running this endpoint's
// engine (sleep mode on) at `port` beside other endpoints' engines.
struct SleepPoolSpec {
  std::string deployment;  // in the endpoint's namespace
  int port = 0;
  std::string gpu_class;  // default: the first variant's
};

struct AutoscalerResource {
  std::string ns;
  std::string name;
  int64_t generation = 0;
  std::string uid;
  policy::EndpointSpec spec;  // spec.name is "namespace/name"
  MetricsSpec metrics;
  std::optional<SleepPoolSpec> sleep_pool;
};

// An InferenceAutoscaler object, checked against the GPUClasses it names.
absl::StatusOr<AutoscalerResource> ParseInferenceAutoscaler(
    const nlohmann::json& object,
    const std::map<std::string, GpuClassResource>& classes);

}  // namespace pilotlight::api
