// Sizing throughput: a decision runs on every controller tick, so sizing
// must take microseconds. Reports the time to size one preset against the
// whole default catalog (every class x TP degree), the time for every preset,
// and one ReplicaModel::MaxConcurrency query.
#include <benchmark/benchmark.h>

#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/sizing.h"

namespace pilotlight::model {
namespace {

const Catalog& TheCatalog() {
  static const Catalog* c = new Catalog(*Catalog::Default());
  return *c;
}

void BM_SizeOnePresetAllClasses(benchmark::State& state) {
  SizingRequest r;
  r.model = *FindPreset("llama-3.1-70b");
  r.workload.concurrency = 32;
  size_t options = 0;
  for (auto _ : state) {
    absl::StatusOr<SizingReport> rep = Size(r, TheCatalog());
    options = rep->options.size();
    benchmark::DoNotOptimize(rep);
  }
  state.counters["options"] = static_cast<double>(options);
}
BENCHMARK(BM_SizeOnePresetAllClasses);

void BM_SizeEveryPresetAllClasses(benchmark::State& state) {
  std::vector<SizingRequest> requests;
  for (const ModelProfile& m : Presets()) {
    SizingRequest r;
    r.model = m;
    r.workload.context_tokens = std::min(8192, m.max_context_tokens);
    r.workload.concurrency = 16;
    requests.push_back(r);
  }
  for (auto _ : state) {
    for (const SizingRequest& r : requests) {
      absl::StatusOr<SizingReport> rep = Size(r, TheCatalog());
      benchmark::DoNotOptimize(rep);
    }
  }
  state.counters["presets"] = static_cast<double>(requests.size());
}
BENCHMARK(BM_SizeEveryPresetAllClasses);

void BM_MaxConcurrency(benchmark::State& state) {
  const EngineTuning tuning;
  const ReplicaModel replica(*FindPreset("llama-3.1-8b"),
                             **TheCatalog().Get("h100-80gb-sxm"), 1,
                             Precision::kBf16, Precision::kBf16, tuning);
  const Workload w;
  for (auto _ : state) {
    benchmark::DoNotOptimize(replica.MaxConcurrency(w, 0.08));
  }
}
BENCHMARK(BM_MaxConcurrency);

}  // namespace
}  // namespace pilotlight::model

BENCHMARK_MAIN();
