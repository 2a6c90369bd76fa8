// Table tests of rule 6 with explicit times: the stabilisation window, the
// rate limit, what stops a scale-down (panic, partial, saturated or rising
// demand), the spec's bounds, the learned hold and paid billing periods.
#include "controller/policy/scale_down_governor.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

absl::Time T(double s) {
  return absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(s);
}

EndpointSpec Spec(int min = 0, int max = 16) {
  EndpointSpec s;
  s.min_replicas = min;
  s.max_replicas = max;
  return s;
}

GovernorInput Busy(double at_s, int load, int warm = 0) {
  return {.now = T(at_s),
          .load = load,
          .warm = warm,
          .ready = 1,
          .lead = absl::Seconds(30),
          .tier_desired = load,
          .billing = absl::Seconds(1)};
}

// One decision after a first one at 8 replicas, 10 s earlier.
TEST(ScaleDownGovernorTest, OneDecisionAfterEight) {
  struct Case {
    std::string name;
    GovernorInput in;
    EndpointSpec spec;
    int target;
    ScaleReason reason;
  };
  const auto with = [](GovernorInput in, auto f) {
    f(in);
    return in;
  };
  const std::vector<Case> cases = {
      {"up at once", Busy(10, 12), Spec(), 12, ScaleReason::kSteady},
      {"down held by the window", Busy(10, 2), Spec(), 8,
       ScaleReason::kScaleDownHeld},
      {"warm pool named", Busy(10, 8, 2), Spec(), 10, ScaleReason::kWarmPool},
      {"partial demand never down",
       with(Busy(10, 2), [](GovernorInput& i) { i.partial = true; }), Spec(), 8,
       ScaleReason::kScaleDownHeld},
      {"from zero named",
       with(Busy(10, 12), [](GovernorInput& i) { i.ready = 0; }), Spec(), 12,
       ScaleReason::kScaleFromZero},
      {"min raises", Busy(10, 12), Spec(14), 14, ScaleReason::kMinReplicas},
      {"max caps", Busy(10, 12), Spec(0, 10), 10, ScaleReason::kMaxReplicas},
      {"idle keeps the keep-alive's replica, the window the rest",
       with(Busy(10, 0),
            [](GovernorInput& i) {
              i.idle = true;
              i.idle_floor = 1;
              i.idle_reason = ScaleReason::kKeepAlive;
            }),
       Spec(), 8, ScaleReason::kScaleDownHeld},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScaleDownGovernor g;
    const DeciderConfig config;
    g.Govern(Busy(0, 8), c.spec, config);
    const ScaleTarget t = g.Govern(c.in, c.spec, config);
    EXPECT_EQ(t.target, c.target);
    EXPECT_EQ(t.reason, c.reason);
    EXPECT_EQ(t.scale_down_delayed, c.in.load + c.in.warm < 8);
  }
}

// Past the window the target falls, by at most half a call; not while
// panicking, while saturated, or while the demand now is above the stable
// window's average (rising).
TEST(ScaleDownGovernorTest, PastTheWindowTheRateLimitAndWhatStopsIt) {
  struct Case {
    std::string name;
    bool panic, saturated, rising;
    int target;
    ScaleReason reason;
  };
  for (const Case& c :
       {Case{"rate limited", false, false, false, 4,
             ScaleReason::kScaleDownLimited},
        Case{"panic", true, false, false, 8, ScaleReason::kPanic},
        Case{"saturated", false, true, false, 8, ScaleReason::kSaturated},
        Case{"rising", false, false, true, 8, ScaleReason::kRising}}) {
    SCOPED_TRACE(c.name);
    ScaleDownGovernor g;
    const DeciderConfig config;
    g.Govern(Busy(0, 8), Spec(), config);
    GovernorInput in = Busy(100, 1);
    in.panic = c.panic;
    in.saturated = c.saturated;
    in.rising = c.rising;
    const ScaleTarget t = g.Govern(in, Spec(), config);
    EXPECT_EQ(t.target, c.target);
    EXPECT_EQ(t.reason, c.reason);
    EXPECT_EQ(t.stabilisation, absl::Seconds(60));
  }
}

// The window spans max(stabilisation, lead): a 90 s lead holds 90 s.
TEST(ScaleDownGovernorTest, TheWindowSpansTheColdStartLead) {
  ScaleDownGovernor g;
  const DeciderConfig config;
  GovernorInput in = Busy(0, 4);
  in.lead = absl::Seconds(90);
  g.Govern(in, Spec(), config);
  for (const auto& [at, want] :
       std::vector<std::pair<double, int>>{{60, 4}, {85, 4}, {100, 2}}) {
    in = Busy(at, 1);
    in.lead = absl::Seconds(90);
    in.tier_desired = 4;
    EXPECT_EQ(g.Govern(in, Spec(), config).target, want) << at;
  }
}

// Levels re-needed 5 minutes after they were dropped, burst after burst:
// the learned hold grows a fifth of its span per burst, to the whole span.
TEST(ScaleDownGovernorTest, TheLearnedHoldGrowsWithEachReneed) {
  ScaleDownGovernor g;
  const DeciderConfig config;
  std::vector<absl::Duration> holds;
  double t = 0;
  for (int burst = 0; burst < 7; ++burst) {
    g.Govern(Busy(t, 3), Spec(), config);  // a burst needs 3
    t += 10;
    const ScaleTarget after = g.Govern(Busy(t, 1), Spec(), config);
    holds.push_back(after.stabilisation);
    t += 300;
  }
  EXPECT_EQ(holds[0], absl::Seconds(60));  // no re-need seen yet
  for (size_t i = 1; i < holds.size(); ++i) {
    EXPECT_GE(holds[i], holds[i - 1]) << i;
  }
  EXPECT_GT(holds.back(), absl::Minutes(5));
  EXPECT_LE(holds.back(), ScaleDownGovernor::kReach);
}

// Hourly billing: a replica started at 0 is kept until the last minute of
// its paid hour, then released.
TEST(ScaleDownGovernorTest, PaidPeriodsAreKeptToTheirLastMinute) {
  ScaleDownGovernor g;
  const DeciderConfig config;
  const auto at = [](double s, int load) {
    GovernorInput in = Busy(s, load);
    in.billing = absl::Hours(1);
    in.tier_desired = 2;
    return in;
  };
  g.Govern(at(0, 2), Spec(), config);
  struct Case {
    double at_s;
    int target;
    bool paid;
  };
  for (const Case& c :
       {Case{600, 2, true}, Case{3000, 2, true}, Case{3541, 1, false}}) {
    const ScaleTarget t = g.Govern(at(c.at_s, 1), Spec(), config);
    EXPECT_EQ(t.target, c.target) << c.at_s;
    EXPECT_EQ(t.paid_until.has_value(), c.paid) << c.at_s;
    if (c.paid) {
      EXPECT_EQ(*t.paid_until, T(3600));
    }
  }
}

}  // namespace
}  // namespace pilotlight::policy
