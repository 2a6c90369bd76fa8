// Benchmark of Decider::Decide for one endpoint with full history: a day of
// demand already learned (windows, idle-gap histogram, rises, time-of-day
// profile), two tiers with on-demand and spot variants. One call per
// iteration, each with the 2 s of demand since the previous one, as the
// controller's tick would pass it. Prints the per-endpoint state size.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "benchmark/benchmark.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/policy/decider.h"

namespace pilotlight::policy {
namespace {

EndpointSpec Spec() {
  EndpointSpec s;
  s.name = "ml/chat";
  s.generation = 1;
  s.model = *model::FindPreset("llama-3.1-8b");
  s.max_replicas = 64;
  const auto variant = [](const char* d, const char* g, CapacityType c) {
    VariantSpec v;
    v.deployment = d;
    v.gpu_class = g;
    v.capacity = c;
    return v;
  };
  s.variants = {
      variant("chat-l40s", "l40s", CapacityType::kOnDemand),
      variant("chat-l40s-spot", "l40s", CapacityType::kSpot),
      variant("chat-h100", "h100-80gb-pcie", CapacityType::kOnDemand),
      variant("chat-h100-spot", "h100-80gb-pcie", CapacityType::kSpot)};
  return s;
}

// Diurnal demand with bursts and idle nights, concurrency at time t.
double Demand(absl::Duration since_start) {
  const double h = absl::ToDoubleHours(since_start);
  const double day = std::fmod(h, 24.0);
  if (day < 6) {
    return std::fmod(h * 60, 17) < 0.3 ? 1 : 0;  // idle nights, a timer
  }
  return 40 + 30 * std::sin((day - 6) / 18 * 3.14159) +
         (std::fmod(h * 60, 7) < 0.5 ? 25 : 0);
}

struct Fixture {
  EndpointSpec spec = Spec();
  model::Catalog catalog = *model::Catalog::Default();
  Decider decider;
  std::vector<VariantState> states = std::vector<VariantState>(4);
  absl::Time t = absl::FromUnixSeconds(1'700'000'000);
  absl::Time start = t;

  Decision Tick() {
    DemandSample d;
    d.at = t;
    d.in_flight = Demand(t - start);
    d.queued = 0.0;
    d.arrivals = *d.in_flight > 0 ? 3.0 : 0.0;
    Snapshot s;
    s.spec = &spec;
    s.catalog = &catalog;
    s.demand = {&d, 1};
    s.variants = states;
    Decision dec = decider.Decide(s, t);
    for (size_t i = 0; i < states.size(); ++i) {
      states[i].desired = dec.variants[i].replicas;
      states[i].ready = dec.variants[i].replicas;  // instant, for the bench
      states[i].cold_start = {5, absl::Seconds(50), absl::Seconds(70)};
    }
    t += absl::Seconds(2);
    return dec;
  }
};

void BM_DecideWithFullHistory(benchmark::State& state) {
  Fixture f;
  for (int i = 0; i < 43200 + 3600; ++i) {  // a day and an hour of history
    f.Tick();
  }
  for (auto _ : state) {
    Decision d = f.Tick();
    benchmark::DoNotOptimize(d);
  }
  state.counters["state_bytes"] = static_cast<double>(f.decider.StateBytes());
}
BENCHMARK(BM_DecideWithFullHistory);

// The same, timing every call, to report the p50 and p99 of one decision.
void BM_DecideLatencyPercentiles(benchmark::State& state) {
  Fixture f;
  for (int i = 0; i < 43200 + 3600; ++i) {
    f.Tick();
  }
  std::vector<double> ns;
  for (auto _ : state) {
    const auto begin = std::chrono::steady_clock::now();
    Decision d = f.Tick();
    const auto end = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(d);
    const double elapsed = std::chrono::duration<double>(end - begin).count();
    ns.push_back(elapsed * 1e9);
    state.SetIterationTime(elapsed);
  }
  std::sort(ns.begin(), ns.end());
  if (!ns.empty()) {
    state.counters["p50_ns"] = ns[ns.size() / 2];
    state.counters["p99_ns"] = ns[ns.size() * 99 / 100];
  }
  state.counters["state_bytes"] = static_cast<double>(f.decider.StateBytes());
}
BENCHMARK(BM_DecideLatencyPercentiles)->UseManualTime()->Iterations(20000);

}  // namespace
}  // namespace pilotlight::policy

BENCHMARK_MAIN();
