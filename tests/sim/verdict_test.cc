#include "controller/sim/verdict.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::sim {
namespace {

using ::testing::HasSubstr;

// A policy's default run over 10,000 requests.
PolicyResult Result(const std::string& name, double cost, double attainment,
                    double cold) {
  PolicyResult p;
  p.name = name;
  p.result.requests = 10000;
  p.result.cost_usd = cost;
  p.result.within_slo = static_cast<int64_t>(attainment * 10000 + 0.5);
  p.result.cold_start_requests = static_cast<int>(cold * 10000 + 0.5);
  return p;
}

SweepPoint Point(std::optional<double> value, double cost, double attainment,
                 double cold) {
  return SweepPoint{value, cost, attainment, cold, 0};
}

MatchedPolicy Swept(const std::string& name, std::vector<SweepPoint> sweep,
                    std::optional<size_t> chosen) {
  MatchedPolicy m;
  m.name = name;
  m.knob = "keep-alive";
  m.unit = "min";
  m.sweep = std::move(sweep);
  m.chosen = chosen;
  return m;
}

MatchReport Match(std::vector<MatchedPolicy> policies) {
  MatchReport m;
  m.target = 0.99;
  m.effective = 0.99;
  m.max_cold_start_fraction = 0.01;
  m.policies = std::move(policies);
  return m;
}

TEST(VerdictTest, DominanceNeedsNoWorseOnAllThreeAndBetterOnOne) {
  struct Case {
    const char* name;
    double cost, attainment, cold;  // the baseline's, against 10/0.995/0.005
    bool dominates;
  };
  const std::vector<Case> cases = {
      {"cheaper, same latency", 9, 0.995, 0.005, true},
      {"same cost, more within SLO", 10, 0.997, 0.005, true},
      {"same cost, fewer cold", 10, 0.995, 0.003, true},
      {"identical", 10, 0.995, 0.005, false},
      {"cheaper but more cold", 9, 0.995, 0.006, false},
      {"cheaper but less within SLO", 9, 0.994, 0.005, false},
      {"dearer and better", 11, 0.999, 0.001, false},
  };
  for (const Case& c : cases) {
    RunReport r;
    r.policies = {Result("pilotlight", 10, 0.995, 0.005),
                  Result("keepalive-10m", c.cost, c.attainment, c.cold)};
    const Verdict v = *Judge(r, nullptr);
    EXPECT_EQ(v.beaten, c.dominates) << c.name;
    EXPECT_EQ(v.dominated_by.size(), c.dominates ? 1U : 0U) << c.name;
    EXPECT_FALSE(v.swept);
  }
}

TEST(VerdictTest, NoneWithoutAPilotlightRun) {
  RunReport r;
  r.policies = {Result("keepalive-10m", 1, 1, 0)};
  EXPECT_FALSE(Judge(r, nullptr).has_value());
}

TEST(VerdictTest, TheOracleAndPilotlightsOwnSweepNeverCount) {
  RunReport r;
  r.policies = {Result("pilotlight", 10, 0.995, 0.005),
                Result("oracle", 1, 1.0, 0.0)};
  MatchedPolicy own = Swept("pilotlight", {Point(0.5, 5, 0.999, 0)}, 0);
  const MatchReport m = Match({own});
  const Verdict v = *Judge(r, &m);
  EXPECT_TRUE(v.dominated_by.empty());
  EXPECT_FALSE(v.beaten);
}

TEST(VerdictTest, AlwaysOnCanDominateButIsNoMatchedBaseline) {
  RunReport r;
  r.policies = {Result("pilotlight", 10, 0.90, 0.05),
                Result("always-on", 9, 1.0, 0.0)};
  const MatchReport m =
      Match({Swept("always-on", {Point(std::nullopt, 9, 1.0, 0)}, 0)});
  const Verdict v = *Judge(r, &m);
  ASSERT_EQ(v.dominated_by.size(), 1U);
  EXPECT_EQ(v.dominated_by[0].policy, "always-on");
  EXPECT_FALSE(v.cheapest_matched.has_value());
  EXPECT_TRUE(v.beaten);
  EXPECT_THAT(v.why, HasSubstr("dominated by always-on"));
}

TEST(VerdictTest, MatchedRatioAgainstTheCheapestOnlineBaselineMeetingTarget) {
  RunReport r;
  r.policies = {Result("pilotlight", 12, 0.996, 0.004),
                Result("keepalive-10m", 13, 0.997, 0.003)};
  // keep-alive 2 min meets the target for 10: pilotlight 1.2x, beaten,
  // though no run dominates it (the cheaper setting is less within SLO).
  const MatchReport m =
      Match({Swept("keepalive-10m",
                   {Point(1, 8, 0.985, 0.02), Point(2, 10, 0.992, 0.008),
                    Point(10, 13, 0.997, 0.003)},
                   1),
             Swept("knative", {Point(0.7, 20, 0.995, 0.002)}, 0)});
  const Verdict v = *Judge(r, &m);
  EXPECT_TRUE(v.swept);
  EXPECT_TRUE(v.dominated_by.empty());
  ASSERT_TRUE(v.cheapest_matched.has_value());
  EXPECT_EQ(v.cheapest_matched->policy, "keepalive-10m");
  EXPECT_EQ(v.cheapest_matched->setting, "keep-alive 2min");
  ASSERT_TRUE(v.matched_ratio.has_value());
  EXPECT_DOUBLE_EQ(*v.matched_ratio, 1.2);
  EXPECT_TRUE(v.beaten);
  EXPECT_THAT(v.why, HasSubstr("costs 1.20x keepalive-10m"));

  // At 9 it is not beaten: 0.90x.
  r.policies[0] = Result("pilotlight", 9, 0.996, 0.004);
  const Verdict cheaper = *Judge(r, &m);
  EXPECT_FALSE(cheaper.beaten) << cheaper.why;
  EXPECT_DOUBLE_EQ(*cheaper.matched_ratio, 0.9);
}

// A baseline that cost nothing (a trace with no request) has no ratio;
// less within SLO than pilotlight, it does not dominate it.
TEST(VerdictTest, AFreeBaselineHasNoRatio) {
  RunReport r;
  r.policies = {Result("pilotlight", 1, 1.0, 0)};
  const MatchReport m = Match({Swept("keda", {Point(0.7, 0, 0.995, 0)}, 0)});
  const Verdict v = *Judge(r, &m);
  EXPECT_FALSE(v.matched_ratio.has_value());
  EXPECT_TRUE(v.beaten);
  EXPECT_THAT(v.why, HasSubstr("costs more than keda"));
  r.policies = {Result("pilotlight", 0, 1.0, 0)};
  const Verdict free = *Judge(r, &m);
  EXPECT_FALSE(free.beaten) << free.why;
  EXPECT_THAT(free.why, HasSubstr("at the cost of the cheapest baseline"));
}

TEST(VerdictTest, MissingATargetABaselineMeetsIsBeatenAtAnyCost) {
  RunReport r;
  r.policies = {Result("pilotlight", 1, 0.98, 0.02)};
  const MatchReport m =
      Match({Swept("keda", {Point(0.7, 50, 0.995, 0.004)}, 0)});
  const Verdict v = *Judge(r, &m);
  EXPECT_FALSE(v.pilotlight_meets_target);
  EXPECT_FALSE(v.matched_ratio.has_value());
  EXPECT_TRUE(v.beaten);
  EXPECT_THAT(v.why, HasSubstr("misses the target"));
}

TEST(VerdictTest, WhereNoBaselineMeetsTheTargetTheFrontierJudges) {
  // A sparse trace: no keep-alive reaches 1 % cold. Pilotlight at 4 % cold
  // and 96 % within SLO; the sweep crosses 96 % between 60 and 120 min.
  const MatchedPolicy keepalive =
      Swept("keepalive-10m",
            {Point(10, 20, 0.80, 0.20), Point(60, 60, 0.94, 0.06),
             Point(120, 100, 0.98, 0.03)},
            std::nullopt);
  const MatchReport m = Match({keepalive});
  RunReport r;
  r.policies = {Result("pilotlight", 75, 0.96, 0.04)};
  const Verdict v = *Judge(r, &m);
  ASSERT_EQ(v.frontier.size(), 1U);
  // Attainment: halfway from 0.94 to 0.98 -> $80. Cold share 4 %: two
  // thirds of the way from 6 % to 3 % -> $86.67.
  EXPECT_NEAR(*v.frontier[0].at_attainment, 80, 1e-9);
  EXPECT_NEAR(*v.frontier[0].at_cold_share, 60 + 40.0 * 2 / 3, 1e-9);
  EXPECT_FALSE(v.beaten) << v.why;

  r.policies = {Result("pilotlight", 82, 0.96, 0.04)};  // above $80
  const Verdict above = *Judge(r, &m);
  EXPECT_TRUE(above.beaten);
  EXPECT_THAT(above.why, HasSubstr("above keepalive-10m's sweep"));

  // Better than the sweep ever gets: nothing to compare, not beaten.
  r.policies = {Result("pilotlight", 500, 0.985, 0.02)};
  const Verdict beyond = *Judge(r, &m);
  EXPECT_FALSE(beyond.frontier[0].at_attainment.has_value());
  EXPECT_FALSE(beyond.frontier[0].at_cold_share.has_value());
  EXPECT_FALSE(beyond.beaten);
}

TEST(VerdictTest, FrontierIsTheCheapestCrossingOfTheSweepsPolyline) {
  // Not monotone: the sweep rises past 0.95 and falls back through it.
  const std::vector<SweepPoint> sweep = {Point(1, 10, 0.90, 0.1),
                                         Point(2, 12, 0.96, 0.05),
                                         Point(3, 30, 0.93, 0.07)};
  // Up through 0.95 at 10 + 2 x 5/6; down through it at 12 + 18 / 3.
  EXPECT_NEAR(*FrontierCostAt(sweep, FrontierAxis::kAttainment, 0.95),
              10 + 2.0 * 5 / 6, 1e-9);
  EXPECT_NEAR(*FrontierCostAt(sweep, FrontierAxis::kAttainment, 0.93),
              10 + 2.0 * 0.03 / 0.06, 1e-9);
  EXPECT_FALSE(
      FrontierCostAt(sweep, FrontierAxis::kColdShare, 0.01).has_value());
}

}  // namespace
}  // namespace pilotlight::sim
