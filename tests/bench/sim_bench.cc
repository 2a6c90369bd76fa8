// Replay speed of the simulator: the bundled Azure code trace (8,819
// requests, ~1 h) laid end to end 20 times (~176k requests, ~19 h), through
// one policy per benchmark. Reports requests replayed per second of CPU.
// Run from the source root (ctest does).
#include <string>

#include "benchmark/benchmark.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/sim/baselines.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/simulator.h"

namespace pilotlight::sim {
namespace {

struct Setup {
  model::Catalog catalog = *model::Catalog::Default();
  SimConfig config;
  EndpointTrace trace;
  double duration_s = 0;
  std::vector<ServiceModel> models;

  Setup() {
    const Trace t = *LoadTrace("controller/sim/data/azure_llm_2023_code.csv",
                               TraceFormat::kAuto, {});
    const EndpointTrace one = t.Endpoint(0);
    const double span = t.duration_s + 60;
    trace.name = "azure-x20";
    for (int copy = 0; copy < 20; ++copy) {
      for (Request r : one.requests) {
        r.arrival_s += copy * span;
        trace.requests.push_back(r);
      }
    }
    duration_s = 20 * span;
    config.catalog = &catalog;
    config.spec.generation = 1;
    config.spec.model = *model::FindPreset("llama-3.1-8b");
    config.spec.max_replicas = 64;
    policy::VariantSpec v;
    v.deployment = "d";
    v.gpu_class = "a100-80gb";
    config.spec.variants = {v};
    models = *BuildServiceModels(config, false);
  }
};

void BM_Replay(benchmark::State& state, const std::string& policy) {
  static Setup* s = new Setup();
  for (auto _ : state) {
    PolicyContext ctx{&s->config, &s->models, &s->trace, false, std::nullopt};
    ScalingPolicyPtr p = *MakePolicy(policy, ctx);
    SimResult r =
        SimulateEndpoint(s->trace, s->duration_s, s->config, s->models, *p);
    benchmark::DoNotOptimize(r);
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(s->trace.requests.size()) *
                             static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Replay, pilotlight, std::string("pilotlight"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, knative, std::string("knative"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, oracle, std::string("oracle"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pilotlight::sim

BENCHMARK_MAIN();
