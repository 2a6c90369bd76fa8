#include "controller/sim/service_model.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/policy/variant_model.h"

namespace pilotlight::sim {

absl::StatusOr<std::vector<ServiceModel>> BuildServiceModels(
    const SimConfig& config, bool trace_has_service_times) {
  const policy::EndpointSpec& spec = config.spec;
  std::vector<ServiceModel> out;
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    const policy::VariantSpec& v = spec.variants[i];
    absl::StatusOr<policy::VariantModel> vm =
        policy::DeriveVariant(spec, i, *config.catalog, config.tuning);
    if (!vm.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown GPU class ", v.gpu_class,
                       " (known: ", config.catalog->Names(), ")"));
    }
    ServiceModel m;
    m.gpus = v.gpus_per_replica;
    m.price_per_hour = vm->price_per_replica_hour;
    m.replica.emplace(vm->replica);
    m.cold_start = config.cold_start.value_or(vm->cold_start);
    if (spec.concurrency_per_replica > 0) {
      m.slots = spec.concurrency_per_replica;
    } else if (trace_has_service_times) {
      m.slots = 1;
    } else {
      m.slots = vm->capacity;
      if (m.slots < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            spec.model.name, " does not meet the TPOT SLO on ", v.gpu_class,
            " x", v.gpus_per_replica, " (see `pilotlight size`)"));
      }
    }
    m.tpot_s.resize(static_cast<size_t>(m.slots) + 1);
    for (int b = 1; b <= m.slots; ++b) {
      m.tpot_s[static_cast<size_t>(b)] =
          m.replica->TpotSeconds(b, spec.workload);
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace pilotlight::sim
