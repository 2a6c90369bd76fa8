// Table tests of the tier rooms with explicit times: how variants group
// into tiers (TierTable), how a tier's replicas split over on-demand and
// spot (VariantSplitter), and when the serving tier moves (TierChooser).
#include <string>
#include <vector>

#include "controller/policy/tier_chooser.h"
#include "controller/policy/tier_table.h"
#include "controller/policy/variant_splitter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/world.h"

namespace pilotlight::policy {
namespace {

using ::testing::HasSubstr;
using testing::Llama8b;
using testing::T0;
using testing::Variant;

struct Fixture {
  EndpointSpec spec;
  model::Catalog catalog = *model::Catalog::Default();
  std::vector<VariantState> states;
  TierTable tiers;
  VariantSplitter splitter;

  explicit Fixture(EndpointSpec s)
      : spec(std::move(s)), states(spec.variants.size()) {}
  Snapshot Snap() const {
    Snapshot s;
    s.spec = &spec;
    s.catalog = &catalog;
    s.variants = states;
    return s;
  }
  absl::Status Refresh() {
    const absl::Status st = tiers.Refresh(Snap(), DeciderConfig{});
    splitter.Reset(tiers.size());
    return st;
  }
};

VariantSpec Spot(std::string deployment, std::string gpu_class) {
  return Variant(std::move(deployment), std::move(gpu_class),
                 CapacityType::kSpot);
}

TEST(TierTableTest, VariantsGroupIntoTiers) {
  struct Case {
    std::string name;
    std::vector<VariantSpec> variants;
    size_t tiers;
    std::vector<int> tier_of;  // per variant
    std::string error;         // a part of it; empty: valid
  };
  const std::vector<Case> cases = {
      {"one class", {Variant("a", "a100-80gb")}, 1, {0}, ""},
      {"on-demand and spot of one class",
       {Variant("a", "a100-80gb"), Spot("b", "a100-80gb")},
       1,
       {0, 0},
       ""},
      {"two GPU models",
       {Variant("a", "a100-80gb"), Variant("b", "l40s")},
       2,
       {0, 1},
       ""},
      {"a second on-demand variant on a tier",
       {Variant("a", "a100-80gb"), Variant("b", "a100-80gb")},
       1,
       {},
       "a second OnDemand variant on a100-80gb x1"},
      {"an unknown class", {Variant("a", "no-such-gpu")}, 0, {}, "no-such-gpu"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f(Llama8b(c.variants));
    const absl::Status st = f.Refresh();
    EXPECT_TRUE(f.tiers.rebuilt());
    if (!c.error.empty()) {
      EXPECT_THAT(std::string(st.message()), HasSubstr(c.error));
      continue;
    }
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(f.tiers.size(), c.tiers);
    for (size_t v = 0; v < c.tier_of.size(); ++v) {
      EXPECT_EQ(f.tiers.variant(static_cast<int>(v)).tier, c.tier_of[v]);
    }
    // The same generation again: no rebuild.
    ASSERT_TRUE(f.Refresh().ok());
    EXPECT_FALSE(f.tiers.rebuilt());
  }
}

// The lead: the model's estimate until 3 cold starts are learned, then
// their p90; a node's start added while the pool is full.
TEST(TierTableTest, LeadFromTheModelThenTheLearnedP90) {
  struct Case {
    int samples;
    bool node_free;
    bool learned;  // the p90 (90 s), else the model's
  };
  for (const Case& c : {Case{0, true, false}, Case{2, true, false},
                        Case{3, true, true}, Case{3, false, true}}) {
    Fixture f(Llama8b({Variant("a", "a100-80gb")}));
    ASSERT_TRUE(f.Refresh().ok());
    const absl::Duration model = f.tiers.variant(0).lead_estimate;
    const absl::Duration node = f.tiers.variant(0).node_provisioning;
    f.states[0].cold_start = {c.samples, absl::Seconds(50), absl::Seconds(90)};
    f.states[0].node_free = c.node_free;
    const absl::Duration want = (c.learned ? absl::Seconds(90) : model) +
                                (c.node_free ? absl::ZeroDuration() : node);
    EXPECT_EQ(f.tiers.Lead(f.Snap(), 0), want) << c.samples;
  }
}

// Measured decode speed moves the capacity: a replica running at half the
// modelled speed serves fewer sequences within the TPOT SLO (a tight one,
// so that the SLO and not the memory bounds the batch).
TEST(TierTableTest, MeasuredSpeedCorrectsTheCapacity) {
  Fixture f(Llama8b({Variant("a", "a100-80gb")}));
  f.spec.slo.tpot = absl::Milliseconds(20);
  ASSERT_TRUE(f.Refresh().ok());
  const int modelled = f.tiers.Capacity(0);
  ASSERT_GT(modelled, 0);
  EXPECT_EQ(f.tiers.ReplicasFor(0, 0, 1.0), 1);
  EXPECT_EQ(f.tiers.ReplicasFor(0, 2.5 * modelled, 1.0), 3);
  for (int i = 0; i < 40; ++i) {
    DemandSample d;
    d.at = T0() + absl::Seconds(2 * i);
    d.in_flight = 8.0;
    d.output_tokens_per_s = 1;  // far slower than modelled: clamped at 0.5
    f.tiers.Learn(0, d, /*ready=*/1, DeciderConfig{});
  }
  EXPECT_NEAR(f.tiers.tier(0).correction, 0.5, 0.01);
  EXPECT_LT(f.tiers.Capacity(0), modelled);
}

TEST(TierTableTest, SpotHealth) {
  struct Case {
    std::string name;
    std::vector<SpotHealth> health;
    std::vector<absl::Time> starting;
    bool unhealthy;
  };
  const absl::Time now = T0() + absl::Hours(1);
  const std::vector<Case> cases = {
      {"healthy", {}, {}, false},
      {"preempted 4 min ago",
       {{"a100-80gb", now - absl::Minutes(4), {}}},
       {},
       true},
      {"preempted 6 min ago",
       {{"a100-80gb", now - absl::Minutes(6), {}}},
       {},
       false},
      {"failed placement",
       {{"a100-80gb", {}, now - absl::Minutes(1)}},
       {},
       true},
      {"another class's preemption", {{"l40s", now, {}}}, {}, false},
      {"a spot replica not ready in time", {}, {now - absl::Minutes(6)}, true},
      {"a spot replica starting", {}, {now - absl::Minutes(1)}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f(Llama8b({Variant("a", "a100-80gb"), Spot("b", "a100-80gb")}));
    ASSERT_TRUE(f.Refresh().ok());
    f.states[1].starting = c.starting;
    Snapshot s = f.Snap();
    s.spot = c.health;
    EXPECT_EQ(f.tiers.SpotUnhealthy(s, 0, now, DeciderConfig{}), c.unhealthy);
  }
}

// One A100 tier with on-demand and spot variants; capacity C per replica.
TEST(VariantSplitterTest, Table) {
  struct Case {
    std::string name;
    Mode mode;
    int replicas;
    double demand_replicas;  // current demand, in replicas' worth
    int ready_od, ready_spot;
    bool unhealthy;
    int on_demand, spot;
  };
  const std::vector<Case> cases = {
      {"realtime: demand's floor on-demand, the rest spot", Mode::kRealtime, 5,
       2, 0, 0, false, 2, 3},
      {"batch: all spot", Mode::kBatch, 5, 2, 0, 0, false, 0, 5},
      {"unhealthy spot: on-demand covers what is not ready", Mode::kBatch, 4, 2,
       0, 1, true, 3, 4},
      {"make-before-break: ready on-demand stays while spot starts",
       Mode::kRealtime, 3, 1, 3, 0, false, 3, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f(Llama8b({Variant("a", "a100-80gb"), Spot("b", "a100-80gb")}));
    f.spec.mode = c.mode;
    ASSERT_TRUE(f.Refresh().ok());
    f.states[0].ready = c.ready_od;
    f.states[1].ready = c.ready_spot;
    const double demand = c.demand_replicas * f.tiers.Capacity(0);
    const TierPlan p = f.splitter.Plan(f.tiers, f.Snap(), 0, c.replicas, demand,
                                       c.unhealthy, 1.0);
    EXPECT_EQ(p.on_demand, c.on_demand);
    EXPECT_EQ(p.spot, c.spot);
    EXPECT_TRUE(p.meets_slo);
    EXPECT_DOUBLE_EQ(p.cost_per_hour, p.on_demand * f.tiers.Price(0) +
                                          p.spot * f.tiers.Price(1));
  }
}

// The fallback outlives the unhealthy spell until spot is ready again, and
// the on-demand replicas it adds are named for it.
TEST(VariantSplitterTest, FallbackLastsUntilSpotIsReady) {
  Fixture f(Llama8b({Variant("a", "a100-80gb"), Spot("b", "a100-80gb")}));
  f.spec.mode = Mode::kBatch;
  ASSERT_TRUE(f.Refresh().ok());
  const SplitRequest r{.tier = 0, .target = 2, .spot_unhealthy = true};
  TierPlan p = f.splitter.Split(f.tiers, f.Snap(), r, 1.0, false);
  EXPECT_TRUE(f.splitter.fallback(0));
  EXPECT_EQ(p.on_demand, 2);
  Decision d;
  EXPECT_TRUE(f.splitter.Assign(f.tiers, f.Snap(), r, p, 1.0, d));
  ASSERT_EQ(d.variants.size(), 2u);
  EXPECT_EQ(d.variants[0].reason, ScaleReason::kSpotFallback);
  // Healthy again, spot not ready yet: still falling back.
  SplitRequest healthy = r;
  healthy.spot_unhealthy = false;
  p = f.splitter.Split(f.tiers, f.Snap(), healthy, 1.0, false);
  EXPECT_TRUE(f.splitter.fallback(0));
  EXPECT_EQ(p.on_demand, 2);
  // Spot ready: the fallback ends.
  f.states[1].ready = 2;
  p = f.splitter.Split(f.tiers, f.Snap(), healthy, 1.0, false);
  EXPECT_FALSE(f.splitter.fallback(0));
}

// An A100 tier and an L40S tier; demand that either serves.
TEST(TierChooserTest, SwitchesAfterTheSustainAndMakesBeforeBreak) {
  Fixture f(Llama8b({Variant("a100", "a100-80gb"), Variant("l40s", "l40s")}));
  ASSERT_TRUE(f.Refresh().ok());
  const DeciderConfig config;
  TierChooser c;
  DemandForecast fc;
  fc.stable = fc.forecast = 1;
  // Nothing running: the cheapest meeting the SLO at once.
  TierChoice choice = c.Choose(f.tiers, f.splitter, f.Snap(), fc, T0(), config);
  ASSERT_EQ(choice.options.size(), 2u);
  const int cheapest =
      choice.options[0].cost_per_hour < choice.options[1].cost_per_hour ? 0 : 1;
  EXPECT_EQ(c.serving(), cheapest);
  EXPECT_FALSE(c.weighing());

  // Running on the dearer tier (a restart adopts it); the cheaper one is
  // watched for the sustain period, then switched to.
  TierChooser restarted;
  const int dear = 1 - cheapest;
  f.states[static_cast<size_t>(dear)].desired = 1;
  f.states[static_cast<size_t>(dear)].ready = 1;
  choice = restarted.Choose(f.tiers, f.splitter, f.Snap(), fc, T0(), config);
  EXPECT_EQ(restarted.serving(), dear);
  EXPECT_TRUE(restarted.weighing());
  choice = restarted.Choose(f.tiers, f.splitter, f.Snap(), fc,
                            T0() + absl::Minutes(9), config);
  EXPECT_EQ(restarted.serving(), dear);
  choice = restarted.Choose(f.tiers, f.splitter, f.Snap(), fc,
                            T0() + absl::Minutes(10), config);
  EXPECT_EQ(restarted.serving(), cheapest);
  EXPECT_EQ(restarted.switching_from(), dear);
  EXPECT_THAT(choice.note, HasSubstr("for 600 s"));
  restarted.SwitchDone();
  EXPECT_EQ(restarted.switching_from(), -1);
}

TEST(DemandForecasterTest, PanicStartsOnABurstAndEndsAStableWindowLater) {
  DemandLearner demand{DeciderConfig{}};
  const DeciderConfig config;
  DemandForecaster f;
  const ForecastContext ctx{.ready = 1,
                            .capacity = 10,
                            .lead = absl::Seconds(30),
                            .loaded_service_s = 2};
  const SampleContext sc{
      .ready = 1, .ready_slots = 10, .service_s = 2, .lead = absl::Seconds(30)};
  struct Step {
    double at_s, in_flight;
    bool panic;
  };
  for (const Step& s : {Step{0, 5, false}, Step{2, 40, true}, Step{30, 5, true},
                        Step{63, 5, false}}) {
    DemandSample d;
    d.at = T0() + absl::Seconds(s.at_s);
    d.in_flight = s.in_flight;
    demand.Observe(d, sc);
    const DemandForecast fc = f.Forecast(demand, ctx, d.at, config);
    EXPECT_EQ(f.panic(), s.panic) << s.at_s;
    EXPECT_EQ(fc.reason, s.panic ? ScaleReason::kPanic : ScaleReason::kSteady);
    EXPECT_GE(fc.base, fc.stable);
    EXPECT_GE(fc.forecast, fc.base);
  }
}

// At zero the offered load raises the forecast: Little's law over the
// arrivals so far, at Poisson's one-sigma lower bound.
TEST(DemandForecasterTest, OfferedLoadAtZero) {
  DemandLearner demand{DeciderConfig{}};
  DemandForecaster f;
  const SampleContext sc{.ready = 0, .service_s = 2, .lead = absl::Seconds(30)};
  for (int i = 0; i <= 5; ++i) {
    DemandSample d;
    d.at = T0() + absl::Seconds(2 * i);
    d.in_flight = 0.0;
    d.queued = 0.0;
    d.arrivals = i == 0 ? 0.0 : 20.0;  // 10 requests/s
    demand.Observe(d, sc);
  }
  const ForecastContext ctx{.ready = 0,
                            .capacity = 10,
                            .lead = absl::Seconds(30),
                            .loaded_service_s = 3};
  const DemandForecast fc =
      f.Forecast(demand, ctx, T0() + absl::Seconds(10), DeciderConfig{});
  // 100 requests in 10 s: (100 - 10) / 10 x 3 s = 27 concurrent.
  EXPECT_DOUBLE_EQ(fc.forecast, 27);
  EXPECT_THAT(fc.note, HasSubstr("offered load at zero 27.0"));
}

}  // namespace
}  // namespace pilotlight::policy
