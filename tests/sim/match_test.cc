// Cost at matched SLO (match.h): each policy's knob is swept over the whole
// trace, and its matched point is the cheapest one within the target
// attainment and the cold-start budget; the target is capped at the
// oracle's attainment less a point.
#include "controller/sim/match.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "controller/model/catalog.h"
#include "controller/sim/baselines.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/verdict.h"
#include "gtest/gtest.h"
#include "tests/sim/one_variant_config.h"

namespace pilotlight::sim {
namespace {

class MatchTest : public ::testing::Test {
 protected:
  MatchTest()
      : catalog_(*model::Catalog::Default()),
        config_(OneVariantConfig(catalog_)) {
    ServeGenOptions window;
    window.duration_s = 1200;
    trace_ = *LoadTrace("controller/sim/data/azure_llm_2023_code.csv",
                        TraceFormat::kAuto, window);
  }

  model::Catalog catalog_;
  SimConfig config_;
  Trace trace_;
};

TEST_F(MatchTest, SweepsEachKnobAndPicksTheCheapestWithinTarget) {
  const std::vector<std::string> names = {"pilotlight", "keda", "keepalive-10m",
                                          "always-on", "oracle"};
  absl::StatusOr<MatchReport> m = MatchSlo(trace_, config_, names, 0.95, {});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->target, 0.95);
  EXPECT_EQ(m->effective, 0.95);  // the oracle serves everything on time
  ASSERT_EQ(m->policies.size(), names.size());
  for (const MatchedPolicy& p : m->policies) {
    SCOPED_TRACE(p.name);
    const std::optional<PolicyKnob> k = KnobOf(p.name);
    // The grid (plus the bisection's points where the target is first met
    // inside a step: none at this target; and, for the online baselines,
    // where pilotlight's defaults stand: a bisection per crossing).
    const size_t grid = k ? k->sweep.size() : 1U;
    if (IsOnlineBaseline(p.name)) {
      ASSERT_GE(p.sweep.size(), grid);
      EXPECT_EQ((p.sweep.size() - grid) % kFrontierRefineSteps, 0U);
    } else {
      ASSERT_EQ(p.sweep.size(), grid);
    }
    // The same figures as one run at that setting.
    RunOptions o;
    o.policies = {p.name};
    o.knob = p.sweep.back().value;
    const RunReport one = *RunSimulation(trace_, config_, o);
    EXPECT_EQ(p.sweep.back().cost_usd, one.policies[0].result.cost_usd);
    EXPECT_EQ(p.sweep.back().slo_attainment,
              SloAttainment(one.policies[0].result));
    // The chosen point meets both bounds, and no cheaper point does.
    for (size_t i = 0; i < p.sweep.size(); ++i) {
      const SweepPoint& s = p.sweep[i];
      const bool meets = s.slo_attainment >= m->effective &&
                         s.cold_start_fraction <= m->max_cold_start_fraction;
      if (p.chosen && i == *p.chosen) {
        EXPECT_TRUE(meets);
      } else if (meets) {
        ASSERT_TRUE(p.chosen);
        EXPECT_GE(s.cost_usd, p.sweep[*p.chosen].cost_usd);
      }
    }
  }
  // More capacity buys attainment: KEDA's lowest target utilisation gets
  // at least the attainment of its default.
  const MatchedPolicy& keda = m->policies[1];
  EXPECT_GE(keda.sweep.back().slo_attainment,
            keda.sweep.front().slo_attainment);
  EXPECT_GT(keda.sweep.back().cost_usd, keda.sweep.front().cost_usd);
  // Always-on and the oracle are within it.
  EXPECT_TRUE(m->policies[3].chosen);
  EXPECT_TRUE(m->policies[4].chosen);
}

// Where the target is first met inside a grid step, the step is bisected:
// the keep-alive baseline reaches 90 % at 5 min and not at 2 on this slice
// (69 %; with a 2 % cold-start budget), so three settings between them are
// run, kept in the sweep's order, and the cheapest that meets the target
// is chosen.
TEST_F(MatchTest, BisectsTheGridStepWhereTheTargetIsFirstMet) {
  config_.spec.slo.max_cold_start_fraction = 0.02;
  absl::StatusOr<MatchReport> m =
      MatchSlo(trace_, config_, {"keepalive-10m"}, 0.90, {});
  ASSERT_TRUE(m.ok()) << m.status();
  const MatchedPolicy& p = m->policies[0];
  const std::vector<double> grid = KnobOf("keepalive-10m")->sweep;
  ASSERT_EQ(p.sweep.size(), grid.size() + kMatchRefineSteps);
  std::vector<double> refined;
  for (size_t i = 0; i < p.sweep.size(); ++i) {
    const double v = *p.sweep[i].value;
    if (i > 0) {
      EXPECT_GT(v, *p.sweep[i - 1].value);  // the grid's order
    }
    if (std::find(grid.begin(), grid.end(), v) == grid.end()) {
      refined.push_back(v);
    }
  }
  ASSERT_EQ(refined.size(), static_cast<size_t>(kMatchRefineSteps));
  for (double v : refined) {
    EXPECT_GT(v, 2);
    EXPECT_LT(v, 5);
  }
  ASSERT_TRUE(p.chosen);
  const SweepPoint& c = p.sweep[*p.chosen];
  EXPECT_GE(c.slo_attainment, 0.90);
  // No evaluated point that meets the target is cheaper.
  for (const SweepPoint& s : p.sweep) {
    if (s.slo_attainment >= 0.90 &&
        s.cold_start_fraction <= m->max_cold_start_fraction) {
      EXPECT_GE(s.cost_usd, c.cost_usd);
    }
  }
  // A refined point is what one run at its setting gives.
  RunOptions o;
  o.policies = {"keepalive-10m"};
  o.knob = 3.5;  // the first midpoint
  const RunReport one = *RunSimulation(trace_, config_, o);
  const auto at =
      std::find_if(p.sweep.begin(), p.sweep.end(),
                   [](const SweepPoint& s) { return s.value == 3.5; });
  ASSERT_NE(at, p.sweep.end());
  EXPECT_EQ(at->cost_usd, one.policies[0].result.cost_usd);
}

// The verdict reads each online baseline's sweep where pilotlight at its
// defaults stands, linearly between neighbouring runs: between the two
// settings whose runs lie either side of pilotlight's attainment (or cold
// share), the knob is bisected, keeping the half that still brackets it,
// so the frontier there is read between runs close to pilotlight's point.
TEST_F(MatchTest, RefinesEachBaselinesSweepWherePilotlightStands) {
  absl::StatusOr<MatchReport> m =
      MatchSlo(trace_, config_, {"pilotlight", "keepalive-10m"}, 0.99, {});
  ASSERT_TRUE(m.ok()) << m.status();
  const SweepPoint& pl = m->policies[0].sweep.front();
  ASSERT_EQ(pl.value, KnobOf("pilotlight")->default_value);
  const MatchedPolicy& ka = m->policies[1];
  const std::vector<double> grid = KnobOf("keepalive-10m")->sweep;
  for (size_t i = 1; i < ka.sweep.size(); ++i) {
    EXPECT_GT(*ka.sweep[i].value, *ka.sweep[i - 1].value);  // in order
  }
  int bracketed = 0;
  for (const bool cold : {false, true}) {
    SCOPED_TRACE(cold ? "cold-start share" : "attainment");
    const auto key = [&](const SweepPoint& q) {
      return cold ? -q.cold_start_fraction : q.slo_attainment;
    };
    const double x = key(pl);
    // The grid's neighbours either side of x.
    for (size_t g = 1; g < grid.size(); ++g) {
      const auto at = [&](double v) {
        return *std::find_if(ka.sweep.begin(), ka.sweep.end(),
                             [&](const SweepPoint& q) { return q.value == v; });
      };
      const SweepPoint a = at(grid[g - 1]);
      const SweepPoint b = at(grid[g]);
      if (!((key(a) < x && key(b) > x) || (key(b) < x && key(a) > x))) {
        continue;
      }
      ++bracketed;
      // Settings run between them, and the nearest runs either side of x
      // closer to it than the grid's.
      int between = 0;
      double below = std::min(key(a), key(b));
      double above = std::max(key(a), key(b));
      for (const SweepPoint& q : ka.sweep) {
        if (*q.value > grid[g - 1] && *q.value < grid[g]) {
          ++between;
          if (key(q) < x) {
            below = std::max(below, key(q));
          } else if (key(q) > x) {
            above = std::min(above, key(q));
          }
        }
      }
      EXPECT_GE(between, kFrontierRefineSteps);
      EXPECT_LT(above - below, std::abs(key(a) - key(b)));
    }
  }
  EXPECT_GT(bracketed, 0) << "the keep-alive sweep never straddles "
                             "pilotlight on this slice: nothing checked";
}

// A TTFT SLO the oracle cannot meet for every request (here: shorter than
// most prefills) caps the target at its attainment less a point.
TEST_F(MatchTest, TargetCappedAtTheOraclesAttainment) {
  config_.spec.slo.ttft = absl::Milliseconds(150);
  absl::StatusOr<MatchReport> m =
      MatchSlo(trace_, config_, {"oracle", "always-on"}, 0.99, {});
  ASSERT_TRUE(m.ok()) << m.status();
  const double oracle = m->policies[0].sweep[0].slo_attainment;
  ASSERT_LT(oracle, 0.99);
  EXPECT_DOUBLE_EQ(m->effective, oracle - 0.01);
  EXPECT_TRUE(m->policies[0].chosen);
}

TEST(KnobTest, KnobsAndBadValues) {
  EXPECT_TRUE(KnobOf("pilotlight"));
  EXPECT_TRUE(KnobOf("keepalive-10m"));
  EXPECT_FALSE(KnobOf("oracle"));
  const model::Catalog catalog = *model::Catalog::Default();
  SimConfig c = OneVariantConfig(catalog);
  const std::vector<ServiceModel> models = *BuildServiceModels(c, false);
  EndpointTrace e;
  PolicyContext ctx{&c, &models, &e, false, 0.0};
  EXPECT_FALSE(MakePolicy("keda", ctx).ok());  // utilisation 0
  ctx.knob = 0.5;
  EXPECT_TRUE(MakePolicy("keda", ctx).ok());
  EXPECT_FALSE(MakePolicy("oracle", ctx).ok());  // nothing to set
}

}  // namespace
}  // namespace pilotlight::sim
