// The oracle is a lower bound for the simulator's own service model: no
// request it serves meets a cold start or a full replica, and no online
// policy is cheaper at an SLO attainment at least the oracle's -- on
// randomised bursty traces (per-second and hourly billing, short and long
// cold starts, traces with their own service times including zero ones),
// on the bundled trace, and on every shared trace when ../shared/traces is
// there. With hourly billing it never costs more than always-on.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/model/catalog.h"
#include "controller/sim/baselines.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/run.h"
#include "controller/sim/simulator.h"
#include "gtest/gtest.h"
#include "tests/sim/one_variant_config.h"

namespace pilotlight::sim {
namespace {

double Attainment(const SimResult& r) {
  return r.requests > 0 ? static_cast<double>(r.within_ttft_slo) /
                              static_cast<double>(r.requests)
                        : 1;
}

const SimResult& Find(const RunReport& report, const std::string& name) {
  for (const PolicyResult& p : report.policies) {
    if (p.name == name) {
      return p.result;
    }
  }
  ADD_FAILURE() << "no policy " << name;
  return report.policies.front().result;
}

// The properties, over every policy of `report`.
void ExpectOracleIsLowerBound(const RunReport& report,
                              const std::string& what) {
  SCOPED_TRACE(what);
  const SimResult& oracle = Find(report, "oracle");
  const SimResult& always_on = Find(report, "always-on");
  EXPECT_EQ(oracle.cold_start_requests, 0);
  EXPECT_EQ(oracle.rejected_requests, 0);
  // Nobody waits under the oracle, as nobody waits under always-on (at its
  // peak all the time): the same time to first token for every request.
  EXPECT_EQ(always_on.cold_start_requests, 0);
  for (double q : {0.5, 0.99, 1.0}) {
    EXPECT_EQ(oracle.ttft.Quantile(q), always_on.ttft.Quantile(q)) << q;
  }
  EXPECT_LE(oracle.cost_usd, always_on.cost_usd * (1 + 1e-9));
  for (const PolicyResult& p : report.policies) {
    if (p.name == "oracle" ||
        Attainment(p.result) < Attainment(oracle) - 1e-12) {
      continue;
    }
    EXPECT_GE(p.result.cost_usd, oracle.cost_usd * (1 - 1e-9))
        << p.name << " is cheaper than the oracle at SLO attainment "
        << Attainment(p.result) << " >= " << Attainment(oracle);
  }
}

// Bursts of Poisson arrivals over `hours`: between them idle gaps from
// seconds to an hour, so keep-alives, scale-to-zero and restarts all
// happen. With `service_times`, each request carries its own service time,
// a tenth of them zero (as some Alibaba rows are).
Trace BurstyTrace(uint32_t seed, double hours, bool service_times) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> idle(1.0 / 600);
  std::uniform_real_distribution<double> rate(0.2, 12);  // req/s
  std::uniform_real_distribution<double> length(5, 240);
  std::uniform_int_distribution<uint32_t> prompt(20, 6000);
  std::uniform_int_distribution<uint32_t> output(0, 600);
  std::exponential_distribution<double> service(1.0 / 3);
  std::uniform_real_distribution<double> u(0, 1);
  Trace t;
  t.endpoints.resize(1);
  EndpointTrace& e = t.endpoints[0];
  e.name = absl::StrCat("bursty-", seed);
  double now = 0;
  while (now < hours * 3600) {
    const double r = rate(rng);
    const double end = now + length(rng);
    std::exponential_distribution<double> gap(r);
    for (now += gap(rng); now < end; now += gap(rng)) {
      Request q{now, prompt(rng), output(rng), -1};
      if (service_times) {
        q.service_s = u(rng) < 0.1 ? 0.0F : static_cast<float>(service(rng));
      }
      e.requests.push_back(q);
    }
    now += idle(rng);
  }
  t.duration_s = e.requests.back().arrival_s;
  return t;
}

class OracleTest : public ::testing::Test {
 protected:
  OracleTest()
      : catalog_(*model::Catalog::Default()),
        config_(OneVariantConfig(catalog_)) {}

  RunReport Run(const Trace& t) {
    absl::StatusOr<RunReport> r = RunSimulation(t, config_, {});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : RunReport{};
  }

  model::Catalog catalog_;
  SimConfig config_;
};

TEST_F(OracleTest, LowerBoundOnRandomisedTraces) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    for (const bool service_times : {false, true}) {
      const Trace t = BurstyTrace(seed, 3, service_times);
      for (const absl::Duration billing : {absl::Seconds(1), absl::Hours(1)}) {
        for (const absl::Duration cold :
             {absl::Seconds(8), absl::Seconds(60)}) {
          config_.billing_granularity = billing;
          config_.cold_start = cold;
          ExpectOracleIsLowerBound(
              Run(t),
              absl::StrCat("seed ", seed,
                           service_times ? ", service "
                                           "times"
                                         : "",
                           ", billing ", absl::FormatDuration(billing),
                           ", cold start ", absl::FormatDuration(cold)));
        }
      }
    }
  }
}

// A request that takes no time still needs a ready replica when it comes:
// the oracle used to plan none for it, and it met a cold start.
TEST_F(OracleTest, ZeroServiceTimeRowsMeetNoColdStart) {
  Trace t;
  t.endpoints.resize(1);
  t.endpoints[0].name = "zero";
  for (int i = 0; i < 5; ++i) {
    t.endpoints[0].requests.push_back({1000.0 * i, 100, 10, 0.0F});
  }
  t.duration_s = 4000;
  config_.cold_start = absl::Seconds(30);
  const RunReport r = Run(t);
  const SimResult& oracle = Find(r, "oracle");
  EXPECT_EQ(oracle.requests, 5);
  EXPECT_EQ(oracle.cold_start_requests, 0);
  EXPECT_EQ(oracle.within_ttft_slo, 5);
  // Five separate starts (gaps of 1000 s > the cold start), each billed
  // from one cold start + a tick before its request.
  EXPECT_EQ(oracle.scale_events, 10);
}

// Hourly billing: a replica is kept through the hour it has paid for, and
// across a gap when restarting would start a new paid hour anyway.
TEST_F(OracleTest, HourlyBillingKeepsPaidHours) {
  Trace t;
  t.endpoints.resize(1);
  t.endpoints[0].name = "hourly";
  // Two short bursts 20 minutes apart, then one 3 hours later.
  for (double at : {0.0, 1200.0, 3 * 3600.0 + 1200}) {
    for (int i = 0; i < 10; ++i) {
      t.endpoints[0].requests.push_back({at + i, 200, 20, -1});
    }
  }
  t.duration_s = t.endpoints[0].requests.back().arrival_s;
  config_.billing_granularity = absl::Hours(1);
  config_.cold_start = absl::Seconds(30);
  config_.spec.variants[0].gpu_class = "a100-80gb";
  const RunReport r = Run(t);
  const SimResult& oracle = Find(r, "oracle");
  const double hour =
      BuildServiceModels(config_, false)->front().price_per_hour;
  // One replica for the first two bursts (one paid hour), one for the
  // last (another): two hours, not three, not the 4+ of always-on.
  EXPECT_NEAR(oracle.cost_usd, 2 * hour, 1e-9);
  EXPECT_EQ(oracle.cold_start_requests, 0);
  EXPECT_GT(Find(r, "always-on").cost_usd, 3.9 * hour);
}

TEST_F(OracleTest, LowerBoundOnTheBundledTrace) {
  absl::StatusOr<Trace> t = LoadTrace(
      "controller/sim/data/azure_llm_2023_code.csv", TraceFormat::kAuto, {});
  ASSERT_TRUE(t.ok()) << t.status();
  for (const absl::Duration billing : {absl::Seconds(1), absl::Hours(1)}) {
    config_.billing_granularity = billing;
    ExpectOracleIsLowerBound(
        Run(*t),
        absl::StrCat("azure code, billing ", absl::FormatDuration(billing)));
  }
}

// Every shared trace (cut: 12 endpoints over 3 days; ServeGen's dense
// clients 3 over 2 h), both billings.
TEST_F(OracleTest, LowerBoundOnEverySharedTrace) {
  const std::string dir = "../shared/traces";
  if (!std::filesystem::exists(dir)) {
    GTEST_SKIP() << dir << " is not there (the shared traces live outside "
                 << "the repository)";
  }
  struct Cut {
    std::string path;
    int endpoints;
    double duration_s;
  };
  const std::vector<Cut> cuts = {
      {"azure_llm_2023/AzureLLMInferenceTrace_code.csv", 12, 259200},
      {"mooncake_fast25/conversation_trace.jsonl.gz", 12, 259200},
      {"alibaba_gentd26/lora_request_trace_2024-11-15_to_2024-11-26.csv.gz", 12,
       259200},
      {"servegen/servegen_language_m-small_traces.tar.gz", 3, 7200},
      {"servegen/servegen_language_m-mid_traces.tar.gz", 3, 7200},
  };
  for (const Cut& c : cuts) {
    ServeGenOptions window;
    window.max_endpoints = c.endpoints;
    window.duration_s = c.duration_s;
    absl::StatusOr<Trace> t =
        LoadTrace(dir + "/" + c.path, TraceFormat::kAuto, window);
    ASSERT_TRUE(t.ok()) << c.path << ": " << t.status();
    for (const absl::Duration billing : {absl::Seconds(1), absl::Hours(1)}) {
      config_.billing_granularity = billing;
      ExpectOracleIsLowerBound(
          Run(*t),
          absl::StrCat(c.path, ", billing ", absl::FormatDuration(billing)));
    }
  }
}

}  // namespace
}  // namespace pilotlight::sim
