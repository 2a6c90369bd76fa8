// Table tests of rule 5's keep-alive and its price: the ski-rental bound,
// the pre-warm for a predicted gap, the SLO's cause to keep longer and the
// bound slo.maxKeepAliveCostPerDayUSD puts on what that costs.
#include "controller/policy/keep_alive_pricer.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

using ::testing::HasSubstr;

// $3.60/h is $0.001/s; a 60 s lead burns $0.06.
constexpr KeepAliveTerms kTerms{.price_per_replica_hour = 3.6,
                                .lead = absl::Seconds(60),
                                .grace = absl::Seconds(30)};

IdleHistogram Gaps(int n, absl::Duration each) {
  IdleHistogram h;
  for (int i = 0; i < n; ++i) {
    h.Record(each);
  }
  return h;
}

TEST(KeepAlivePricerTest, Table) {
  struct Case {
    std::string name;
    IdleHistogram gaps;
    ColdStartCounts counts;
    std::optional<double> penalty_usd;
    std::optional<double> cap_usd_per_day;
    double price_per_hour;
    absl::Duration keep_alive, break_even;
    absl::Duration prewarm_from;
    bool capped;
    std::string cause;  // a part of it; empty: none
  };
  // 4 gaps of 10 min (too few for the histogram's windows), 10 gaps in
  // 1,000 requests, 5 requests a cold start: the SLO allows 1 %, so 20 % of
  // the gaps may end cold: the keep-alive covers the 10-minute bin, 660 s.
  const ColdStartCounts sparse{.requests = 1000,
                               .cold_start_requests = 0,
                               .gaps = 10,
                               .requests_per_cold_start = 5};
  const std::vector<Case> cases = {
      {"no history: T* = B / r, B = burn + burn",
       {},
       {},
       std::nullopt,
       std::nullopt,
       3.6,
       absl::Seconds(120),
       absl::Seconds(120),
       absl::InfiniteDuration(),
       false,
       ""},
      {"the spec's penalty raises T*",
       {},
       {},
       0.36,
       std::nullopt,
       3.6,
       absl::Seconds(420),
       absl::Seconds(420),
       absl::InfiniteDuration(),
       false,
       ""},
      {"a free replica is kept the histogram's range",
       {},
       {},
       std::nullopt,
       std::nullopt,
       0,
       absl::Hours(4),
       absl::InfiniteDuration(),
       absl::InfiniteDuration(),
       false,
       ""},
      {"a predicted gap: the grace, then back one lead early",
       Gaps(10, absl::Minutes(60) + absl::Seconds(5)),
       {},
       std::nullopt,
       std::nullopt,
       3.6,
       absl::Seconds(30),
       absl::Seconds(120),
       absl::Minutes(54) - absl::Seconds(60),
       false,
       ""},
      {"the SLO needs longer than T*", Gaps(4, absl::Minutes(10)), sparse,
       std::nullopt, std::nullopt, 3.6, absl::Seconds(660), absl::Seconds(120),
       absl::InfiniteDuration(), false, "SLO needs 660 s, ~$12.24/day idle"},
      {"the bound holds it to what $5/day pays", Gaps(4, absl::Minutes(10)),
       sparse, std::nullopt, 5.0, 3.6, absl::Seconds(300), absl::Seconds(120),
       absl::InfiniteDuration(), true,
       "held to slo.maxKeepAliveCostPerDayUSD $5.00/day (it needs 660 s, "
       "$12.24/day): ~5.0% of requests cold"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EndpointSpec spec;
    spec.slo.cold_start_penalty_usd = c.penalty_usd;
    spec.slo.max_keep_alive_cost_per_day_usd = c.cap_usd_per_day;
    KeepAliveTerms terms = kTerms;
    terms.price_per_replica_hour = c.price_per_hour;
    KeepAlivePricer pricer;
    const IdleEvidence e{
        .gaps = &c.gaps,
        .gaps_recorded = static_cast<uint32_t>(c.gaps.samples()),
        .gaps_per_day = 24,
        .counts = c.counts};
    const KeepAlivePlan p = pricer.Plan(spec, e, terms);
    EXPECT_EQ(p.keep_alive, c.keep_alive);
    EXPECT_EQ(p.break_even, c.break_even);
    EXPECT_EQ(p.prewarm_from, c.prewarm_from);
    EXPECT_EQ(p.budget_capped, c.capped);
    EXPECT_DOUBLE_EQ(p.idle_cost_per_hour, c.price_per_hour);
    if (c.cause.empty()) {
      EXPECT_EQ(p.cause, "");
    } else {
      EXPECT_THAT(p.cause, HasSubstr(c.cause));
    }
    // The same question again gives the same answer (from the cache).
    const KeepAlivePlan again = pricer.Plan(spec, e, terms);
    EXPECT_EQ(again.keep_alive, p.keep_alive);
    EXPECT_EQ(again.budget_cost_per_day, p.budget_cost_per_day);
    EXPECT_EQ(again.cause, p.cause);
  }
}

// Observed cold starts over the budget keep to the histogram's tail.
TEST(KeepAlivePricerTest, OverBudgetKeepsToTheTail) {
  const IdleHistogram gaps = Gaps(4, absl::Minutes(10));
  EndpointSpec spec;
  KeepAlivePricer pricer;
  const IdleEvidence e{.gaps = &gaps,
                       .gaps_recorded = 4,
                       .gaps_per_day = 24,
                       .counts = {.requests = 100,
                                  .cold_start_requests = 5,
                                  .gaps = 1,
                                  .requests_per_cold_start = 1}};
  const KeepAlivePlan p = pricer.Plan(spec, e, kTerms);
  EXPECT_EQ(p.keep_alive, absl::Hours(4));  // too few gaps: the range
  EXPECT_THAT(p.cause, HasSubstr("cold starts over budget"));
  EXPECT_GT(pricer.HeapBytes(), 0u);
}

}  // namespace
}  // namespace pilotlight::policy
