// Table tests of what the decider learns from demand samples, with explicit
// times: which samples count, the concurrency each stands for, idle gaps,
// the offered load at zero and the cold-start budget's counts.
#include "controller/policy/demand_learner.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

absl::Time T(double s) {
  return absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(s);
}

DemandSample Sample(double at_s, std::optional<double> in_flight,
                    std::optional<double> queued = std::nullopt,
                    std::optional<double> arrivals = std::nullopt,
                    bool partial = false) {
  DemandSample d;
  d.at = T(at_s);
  d.in_flight = in_flight;
  d.queued = queued;
  d.arrivals = arrivals;
  d.partial = partial;
  return d;
}

// One replica of 8 slots ready, 2 s per request, a 40 s lead.
constexpr SampleContext kOneReady{
    .ready = 1, .ready_slots = 8, .service_s = 2, .lead = absl::Seconds(40)};
constexpr SampleContext kNoneReady{
    .ready = 0, .ready_slots = 0, .service_s = 2, .lead = absl::Seconds(40)};

TEST(DemandLearnerTest, WhichSamplesCountAndWhatEachStandsFor) {
  struct Case {
    std::string name;
    std::vector<DemandSample> before;  // observed first
    DemandSample sample;
    SampleContext ctx;
    bool counted;
    double concurrency;  // last_concurrency() after, when counted
  };
  const std::vector<Case> cases = {
      {"in flight alone", {}, Sample(0, 3.0), kOneReady, true, 3},
      // The backlog weighs S / L = 2 / 40 of a slot per request.
      {"queued at S / L", {}, Sample(0, 2.0, 20.0), kOneReady, true, 3},
      // Little's law: 10 arrivals in 5 s at 2 s each.
      {"arrivals alone",
       {Sample(0, 0.0)},
       Sample(5, std::nullopt, std::nullopt, 10.0),
       kOneReady,
       true,
       4},
      {"no figure at all",
       {Sample(0, 1.0)},
       Sample(5, std::nullopt),
       kOneReady,
       false,
       1},
      {"arrivals of no span",
       {},
       Sample(0, std::nullopt, std::nullopt, 3.0),
       kOneReady,
       false,
       0},
      {"seen before", {Sample(5, 2.0)}, Sample(5, 7.0), kOneReady, false, 2},
      {"out of order", {Sample(5, 2.0)}, Sample(4, 7.0), kOneReady, false, 2},
      {"partial that saw nothing",
       {Sample(0, 2.0)},
       Sample(2, 0.0, 0.0, 0.0, /*partial=*/true),
       kOneReady,
       false,
       2},
      {"partial that saw some",
       {Sample(0, 2.0)},
       Sample(2, 1.0, 0.0, 0.0, /*partial=*/true),
       kOneReady,
       true,
       1},
      {"negative clipped", {}, Sample(0, -2.0), kOneReady, true, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DemandLearner l{DeciderConfig{}};
    for (const DemandSample& d : c.before) {
      l.Observe(d, c.ctx);
    }
    EXPECT_EQ(l.Observe(c.sample, c.ctx), c.counted);
    EXPECT_DOUBLE_EQ(l.last_concurrency(), c.concurrency);
  }
}

TEST(DemandLearnerTest, SaturatedWhenEverySlotIsBusyAndRequestsWait) {
  struct Case {
    double in_flight, queued;
    bool saturated;
  };
  for (const Case& c : {Case{8, 1, true}, Case{8, 0, false}, Case{6, 1, false},
                        Case{7, 2, true}}) {
    DemandLearner l{DeciderConfig{}};
    l.Observe(Sample(0, c.in_flight, c.queued), kOneReady);
    EXPECT_EQ(l.saturated(), c.saturated) << c.in_flight << " + " << c.queued;
  }
}

// Busy, then idle from 10 s, busy again at 70 s: one gap of 60 s, its
// busy period's first lead counted for the budget.
TEST(DemandLearnerTest, IdleGapsAndTheBusyPeriodsFirstLead) {
  DemandLearner l{DeciderConfig{}};
  EXPECT_TRUE(l.idle());
  l.Observe(Sample(0, 1.0, 0.0, 1.0), kOneReady);
  EXPECT_FALSE(l.idle());
  l.Observe(Sample(10, 0.0, 0.0, 0.0), kOneReady);
  EXPECT_TRUE(l.idle());
  EXPECT_EQ(l.idle_since(), T(10));
  EXPECT_EQ(l.gaps_recorded(), 0u);
  l.Observe(Sample(70, 1.0, 0.0, 3.0), kOneReady);
  EXPECT_EQ(l.gaps_recorded(), 1u);
  EXPECT_EQ(l.idle_gaps().samples(), 1);
  EXPECT_TRUE(l.counting_burst());
  // The lead (40 s) passes: the burst's requests (3 + 2) are the requests a
  // cold start delays.
  l.Observe(Sample(110, 1.0, 0.0, 2.0), kOneReady);
  EXPECT_FALSE(l.counting_burst());
  EXPECT_DOUBLE_EQ(l.counts().requests_per_cold_start, 5);
  EXPECT_GT(l.counts().gaps, 0);
  // At a 6 h half-life a few minutes barely decay the six requests.
  EXPECT_NEAR(l.counts().requests, 6, 0.02);
  EXPECT_DOUBLE_EQ(l.counts().cold_start_requests, 0);
}

// The first sample starts the idle clock at its own time: a restarted
// controller must not find every endpoint idle since the epoch.
TEST(DemandLearnerTest, TheFirstSampleStartsTheIdleClock) {
  DemandLearner l{DeciderConfig{}};
  l.Observe(Sample(100, 0.0, 0.0, 0.0), kOneReady);
  EXPECT_TRUE(l.idle());
  EXPECT_EQ(l.idle_since(), T(100));
}

// At zero: arrivals are summed from the first one, and a hold that held
// fewer than arrived censors the rises that follow.
TEST(DemandLearnerTest, OfferedLoadAtZero) {
  DemandLearner l{DeciderConfig{}};
  l.Observe(Sample(0, 0.0, 0.0, 0.0), kNoneReady);
  EXPECT_EQ(l.at_zero_since(), absl::InfiniteFuture());
  l.Observe(Sample(2, 0.0, 4.0, 4.0), kNoneReady);
  EXPECT_EQ(l.at_zero_since(), T(0));
  EXPECT_DOUBLE_EQ(l.at_zero_arrivals(), 4);
  l.Observe(Sample(4, 0.0, 8.0, 6.0), kNoneReady);
  EXPECT_DOUBLE_EQ(l.at_zero_arrivals(), 10);
  // A replica ready: no longer at zero.
  l.Observe(Sample(6, 8.0, 0.0, 1.0), kOneReady);
  EXPECT_EQ(l.at_zero_since(), absl::InfiniteFuture());
}

// Requests that arrive with no replica ready count against the budget.
TEST(DemandLearnerTest, ColdStartRequestsAreThoseThatMetNoReadyReplica) {
  DemandLearner l{DeciderConfig{}};
  l.Observe(Sample(0, 0.0, 0.0, 0.0), kNoneReady);
  l.Observe(Sample(2, 0.0, 3.0, 3.0), kNoneReady);
  l.Observe(Sample(4, 3.0, 0.0, 5.0), kOneReady);
  EXPECT_NEAR(l.counts().requests, 8, 1e-3);
  EXPECT_NEAR(l.counts().cold_start_requests, 3, 1e-3);
}

// Skipping quiet samples decays the counts as deciding on them would.
TEST(DemandLearnerTest, SkipQuietMatchesObservingQuietSamples) {
  DemandLearner observed{DeciderConfig{}}, skipped{DeciderConfig{}};
  for (DemandLearner* l : {&observed, &skipped}) {
    l->Observe(Sample(0, 2.0, 0.0, 10.0), kOneReady);
    l->Observe(Sample(2, 0.0, 0.0, 0.0), kOneReady);
  }
  for (int i = 0; i < 500; ++i) {
    observed.Observe(Sample(4 + 2 * i, 0.0, 0.0, 0.0), kOneReady);
  }
  skipped.SkipQuiet(T(4), absl::Seconds(2), 500);
  EXPECT_EQ(observed.last_sample_at(), skipped.last_sample_at());
  EXPECT_EQ(observed.counts().requests, skipped.counts().requests);
  EXPECT_EQ(observed.counts().gaps, skipped.counts().gaps);
  const absl::Time end = *observed.last_sample_at();
  EXPECT_EQ(observed.concurrency().Max(end, absl::Seconds(60)),
            skipped.concurrency().Max(end, absl::Seconds(60)));
}

TEST(DemandLearnerTest, DecayHalvesOverAHalfLife) {
  struct Case {
    absl::Duration dt, half_life;
    double want;
  };
  for (const Case& c : {Case{absl::Hours(6), absl::Hours(6), 50},
                        Case{absl::Hours(12), absl::Hours(6), 25},
                        Case{absl::ZeroDuration(), absl::Hours(6), 100},
                        Case{absl::Hours(1), absl::ZeroDuration(), 100},
                        Case{-absl::Hours(1), absl::Hours(6), 100}}) {
    EXPECT_DOUBLE_EQ(Decay(100, c.dt, c.half_life), c.want);
  }
}

}  // namespace
}  // namespace pilotlight::policy
