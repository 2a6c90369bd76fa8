#include "controller/policy/endpoint_spec.h"

#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace pilotlight::policy {

absl::string_view ModeName(Mode m) {
  return m == Mode::kBatch ? "Batch" : "Realtime";
}

absl::string_view CapacityTypeName(CapacityType c) {
  return c == CapacityType::kSpot ? "Spot" : "OnDemand";
}

namespace {

absl::Status Invalid(absl::string_view field, absl::string_view value,
                     absl::string_view allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " = ", value, ": ", allowed));
}

std::string Secs(absl::Duration d) {
  return absl::StrCat(absl::ToDoubleSeconds(d), "s");
}

absl::Status ValidateSlo(const EndpointSlo& slo) {
  if (slo.ttft <= absl::ZeroDuration()) {
    return Invalid("slo.ttftSeconds", Secs(slo.ttft), "must be > 0");
  }
  if (slo.tpot <= absl::ZeroDuration()) {
    return Invalid("slo.tpotSeconds", Secs(slo.tpot), "must be > 0");
  }
  if (!(slo.max_cold_start_fraction > 0 && slo.max_cold_start_fraction < 1)) {
    return Invalid("slo.maxColdStartFraction",
                   absl::StrCat(slo.max_cold_start_fraction),
                   "must be in (0, 1)");
  }
  if (slo.cold_start_penalty_usd && *slo.cold_start_penalty_usd < 0) {
    return Invalid("slo.coldStartPenaltyUSD",
                   absl::StrCat(*slo.cold_start_penalty_usd), "must be >= 0");
  }
  if (const std::optional<double>& cap = slo.max_keep_alive_cost_per_day_usd;
      cap && !(*cap >= 0 && std::isfinite(*cap))) {
    return Invalid("slo.maxKeepAliveCostPerDayUSD", absl::StrCat(*cap),
                   "must be a number >= 0");
  }
  return absl::OkStatus();
}

// Variant `i`: its own Deployment, a class of the catalog, a GPU count its
// nodes hold, spot only where the class has a spot price.
absl::Status ValidateVariant(const VariantSpec& v, size_t i,
                             const model::Catalog& catalog,
                             std::set<std::string>& deployments) {
  const std::string at = absl::StrCat("variants[", i, "]");
  if (v.deployment.empty()) {
    return Invalid(absl::StrCat(at, ".deployment"), "\"\"",
                   "must name a Deployment");
  }
  if (!deployments.insert(v.deployment).second) {
    return Invalid(absl::StrCat(at, ".deployment"), v.deployment,
                   "each variant needs its own Deployment");
  }
  absl::StatusOr<const model::GpuClass*> gpu = catalog.Get(v.gpu_class);
  if (!gpu.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".gpuClass: ", gpu.status().message()));
  }
  if (v.gpus_per_replica < 1 ||
      v.gpus_per_replica > (*gpu)->max_gpus_per_node) {
    return Invalid(absl::StrCat(at, ".gpusPerReplica"),
                   absl::StrCat(v.gpus_per_replica),
                   absl::StrCat("must be in [1, ", (*gpu)->max_gpus_per_node,
                                "] on ", v.gpu_class));
  }
  if (v.capacity == CapacityType::kSpot &&
      (*gpu)->price_spot_per_gpu_hour <= 0) {
    return Invalid(absl::StrCat(at, ".capacityType"), "Spot",
                   absl::StrCat(v.gpu_class, " has no spot price"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateEndpointSpec(const EndpointSpec& spec,
                                  const model::Catalog& catalog) {
  if (absl::Status st = ValidateSlo(spec.slo); !st.ok()) {
    return st;
  }
  if (spec.concurrency_per_replica < 0) {
    return Invalid("concurrencyPerReplica",
                   absl::StrCat(spec.concurrency_per_replica),
                   "must be >= 0 (0 = from the sizing model)");
  }
  if (spec.min_replicas < 0) {
    return Invalid("replicas.min", absl::StrCat(spec.min_replicas),
                   "must be >= 0");
  }
  if (spec.max_replicas < 1 || spec.max_replicas < spec.min_replicas) {
    return Invalid("replicas.max", absl::StrCat(spec.max_replicas),
                   absl::StrCat("must be >= 1 and >= replicas.min (",
                                spec.min_replicas, ")"));
  }
  if (spec.workload.context_tokens < 1 || spec.workload.prompt_tokens < 1 ||
      spec.workload.output_tokens < 1) {
    return absl::InvalidArgumentError(
        "model.maxContextTokens and the typical prompt/output tokens must be "
        ">= 1");
  }
  if (absl::Status st = model::ValidateProfile(spec.model); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model: ", st.message()));
  }
  if (spec.variants.empty()) {
    return Invalid("variants", "[]", "at least one variant is required");
  }
  std::set<std::string> deployments;
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    if (absl::Status st =
            ValidateVariant(spec.variants[i], i, catalog, deployments);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace pilotlight::policy
