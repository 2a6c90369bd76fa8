#include "controller/policy/variant_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/model/cold_start.h"

namespace pilotlight::policy {

absl::StatusOr<VariantModel> DeriveVariant(const EndpointSpec& spec, size_t i,
                                           const model::Catalog& catalog,
                                           const model::EngineTuning& tuning) {
  const VariantSpec& v = spec.variants.at(i);
  const model::GpuClass* gpu = catalog.Find(v.gpu_class);
  if (gpu == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("variants[", i, "].gpuClass: ", v.gpu_class,
                     " not in the catalog (", catalog.Names(), ")"));
  }
  VariantModel m{
      .replica = model::ReplicaModel(spec.model, *gpu, v.gpus_per_replica,
                                     spec.weights, spec.kv, tuning),
      .price_per_replica_hour = 0,
      .cold_start = absl::ZeroDuration(),
      .node_provisioning = v.cold_start.node_provisioning,
      .capacity = 0,
      .ttft_s = 0};
  m.price_per_replica_hour =
      v.gpus_per_replica * (v.capacity == CapacityType::kSpot
                                ? gpu->price_spot_per_gpu_hour
                                : gpu->price_on_demand_per_gpu_hour);
  model::ColdStartAssumptions free_node = v.cold_start;
  free_node.node_free = true;
  m.cold_start = model::EstimateColdStart(m.replica.weight_bytes_per_gpu(),
                                          *gpu, free_node)
                     .total();
  m.capacity = spec.concurrency_per_replica > 0
                   ? spec.concurrency_per_replica
                   : m.replica.MaxConcurrency(
                         spec.workload, absl::ToDoubleSeconds(spec.slo.tpot));
  m.ttft_s = m.replica.TtftSeconds(spec.workload.prompt_tokens);
  return m;
}

absl::StatusOr<model::SleepEstimate> PoolSleep(const EndpointSpec& spec,
                                               const model::Catalog& catalog,
                                               const std::string& gpu_class,
                                               const char* what) {
  const VariantSpec& v = spec.variants.front();
  const model::GpuClass* gpu = catalog.Find(gpu_class);
  if (gpu == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(what, ": GPU class ", gpu_class, " not in the catalog"));
  }
  const int tp = std::max(1, v.gpus_per_replica);
  const double per_gpu = model::WeightBytes(spec.model, spec.weights) / tp;
  const model::SleepEstimate e =
      model::EstimateSleep(per_gpu, tp, *gpu, model::SleepAssumptions{});
  if (e.engines_per_gpu <= 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: %s's nodes (%.0f GiB of memory a GPU) cannot hold %s's %.1f GiB "
        "of weights asleep; choose a class whose nodes can (pilotlight size "
        "shows ASLEEP/GPU)",
        what, gpu->name, gpu->host_memory_gib_per_gpu, spec.model.name,
        per_gpu / model::kGiB));
  }
  return e;
}

}  // namespace pilotlight::policy
