// The replay's arithmetic on hand-worked records: the replica integral, the
// live summary, and the comparison's relative differences.
#include "tests/tools/replay/replay.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::tools {
namespace {

TEST(ReplicaSecondsTest, StepsHoldUntilTheNextSampleAndStopAtTheWindow) {
  // 0 until 2 s, 1 until 5 s, 3 until 8 s, then 2 past the 10 s window.
  const std::vector<TimelineSample> t = {
      {-4, 0, 0}, {2, 1, 0}, {5, 3, 1}, {8, 2, 2}, {12, 0, 0}};
  EXPECT_DOUBLE_EQ(ReplicaSeconds(t, 10), 1 * 3 + 3 * 3 + 2 * 2);
  // A sample before zero holds into the window from zero.
  EXPECT_DOUBLE_EQ(ReplicaSeconds({{-1, 2, 2}}, 5), 10);
  EXPECT_DOUBLE_EQ(ReplicaSeconds({}, 5), 0);
}

TEST(QuantileTest, NearestRank) {
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 4, 2, 3}, 0.5), 3);
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 4, 2, 3}, 0.99), 5);
  EXPECT_DOUBLE_EQ(Quantile({5, 1, 4, 2, 3}, 0.2), 1);
  EXPECT_DOUBLE_EQ(Quantile({}, 0.5), 0);
}

TEST(SummariseLiveTest, TtftFromTheDueTimeAndALostRequestMissesTheSlo) {
  std::vector<RequestRecord> r(4);
  // Due at 1 s, first byte at 1.5 s: 0.5 s, within a 2 s SLO.
  r[0] = {1, 1, 1.5, 2, 200, false, 0, 10, 5, true};
  // Held for a cold start: 12 s after it was due.
  r[1] = {2, 2, 14, 15, 200, true, 11.5, 10, 5, true};
  // Sent late (all senders busy): still measured from when it was due.
  r[2] = {3, 4, 4.5, 5, 200, false, 0, 10, 5, true};
  // Never answered: counted as a request, outside the SLO, not answered.
  r[3] = {4, 4, -1, 9, 0, false, 0, 10, 5, false};
  const std::vector<TimelineSample> t = {{0, 0, 0}, {1, 1, 0}, {11, 1, 1}};
  const ReplaySummary s = SummariseLive(r, t, 2, 20, 2.0, 3.6);
  EXPECT_EQ(s.requests, 4);
  EXPECT_EQ(s.answered, 3);
  EXPECT_EQ(s.cold_start_requests, 1);
  EXPECT_EQ(s.scale_events, 2);
  EXPECT_DOUBLE_EQ(s.replica_seconds, 19);
  EXPECT_DOUBLE_EQ(s.ttft_p50_s, 1.5);  // the median of 0.5, 1.5, 12
  EXPECT_DOUBLE_EQ(s.ttft_p99_s, 12);
  EXPECT_DOUBLE_EQ(s.ttft_attainment, 0.5);  // 2 of 4
  EXPECT_DOUBLE_EQ(s.cost_usd, 19 * 3.6 / 3600);
}

TEST(ColdStartTrackerTest, FirstSightToFirstReadySample) {
  ColdStartTracker t;
  t.Observe(1.0, "a", false);
  t.Observe(1.25, "a", false);
  t.Observe(1.25, "b", false);
  t.Observe(11.25, "a", true);  // a: 10.25 s
  t.Observe(11.5, "a", true);   // counted once
  t.Observe(11.5, "c", true);   // first seen Ready: its start was missed
  t.Observe(12.0, "c", true);
  t.Observe(21.75, "b", true);  // b: 20.5 s
  EXPECT_THAT(t.cold_starts(), ::testing::ElementsAre(10.25, 20.5));
}

TEST(MedianTest, MiddleOrMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({}), 0);
}

TEST(SpreadTest, EachFigureOnItsOwn) {
  std::vector<ReplaySummary> runs(3);
  runs[0].replica_seconds = 100;
  runs[0].cold_start_requests = 30;
  runs[1].replica_seconds = 300;
  runs[1].cold_start_requests = 10;
  runs[2].replica_seconds = 200;
  runs[2].cold_start_requests = 20;
  const SimSpread s = Spread(runs);
  EXPECT_DOUBLE_EQ(s.median.replica_seconds, 200);
  EXPECT_DOUBLE_EQ(s.min.replica_seconds, 100);
  EXPECT_DOUBLE_EQ(s.max.replica_seconds, 300);
  EXPECT_EQ(s.median.cold_start_requests, 20);
  EXPECT_EQ(s.min.cold_start_requests, 10);
  EXPECT_EQ(s.max.cold_start_requests, 30);
}

// An even number of runs: a count's median falls between two counts and is
// kept so (it was truncated, 81.5 -> 81, when counts were integers).
TEST(SpreadTest, ACountsMedianMayFallBetweenTwo) {
  std::vector<ReplaySummary> runs(2);
  runs[0].cold_start_requests = 81;
  runs[1].cold_start_requests = 82;
  EXPECT_DOUBLE_EQ(Spread(runs).median.cold_start_requests, 81.5);
}

// Ticks every 2 s at 1.09 s past the slice's start, with decisions between
// them (pokes) and jitter of a few ms: the phase is the ticks'.
TEST(TickPhaseTest, TheTicksPhaseDespitePokesAndJitter) {
  std::vector<double> t;
  for (int k = 0; k < 100; ++k) {
    t.push_back(1.09 + 2 * k + 0.002 * (k % 3 - 1));
  }
  t.insert(t.end(), {0.3, 17.71, 55.05, 101.5});  // pokes
  const std::optional<double> p = TickPhase(t, 2);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(*p, 1.09, 0.003);
}

// Near the wrap: ticks at 1.99 and 0.01 s past whole ticks are one phase,
// and times before the slice (negative) count as their phase.
TEST(TickPhaseTest, AroundTheWrapAndBeforeTheStart) {
  std::vector<double> t;
  for (int k = -5; k < 50; ++k) {
    t.push_back(2 * k + (k % 2 == 0 ? 1.995 : 0.005));
  }
  const std::optional<double> p = TickPhase(t, 2);
  ASSERT_TRUE(p.has_value());
  EXPECT_LT(std::min(*p, 2 - *p), 0.006) << *p;
}

TEST(TickPhaseTest, NoneWithoutAgreementOrDecisions) {
  EXPECT_FALSE(TickPhase({1, 3, 5}, 2).has_value());  // fewer than 10
  std::vector<double> spread;
  for (int k = 0; k < 40; ++k) {
    spread.push_back(k * 0.37);  // phases all over the tick
  }
  EXPECT_FALSE(TickPhase(spread, 2).has_value());
}

// Requests sent and done at times spread over each second; the
// controller's samples at x.09 s read the concurrency of 0.8 s before (a
// report at x.29 s of the second before): the lag found is 0.8 s.
TEST(ReportLagTest, TheLagAtWhichTheSamplesMatchTheRequests) {
  std::vector<RequestRecord> records;
  for (int s = 0; s < 200; ++s) {
    for (int i = 0; i < 1 + s % 4; ++i) {
      RequestRecord r;
      r.due_s = r.sent_s = s + 0.05 * ((7 * s + 3 * i) % 20);
      r.done_s = r.sent_s + 2 + 0.05 * ((11 * s + 5 * i) % 20);
      records.push_back(r);
    }
  }
  const auto truth = [&](double t) {
    double n = 0;
    for (const RequestRecord& r : records) {
      n += r.sent_s <= t && t < r.done_s ? 1 : 0;
    }
    return n;
  };
  std::vector<DemandSample> samples;
  for (int k = 5; k < 95; ++k) {
    const double t = 2 * k + 1.09;
    samples.push_back({t, truth(t - 0.8)});
  }
  const std::optional<double> lag = ReportLag(records, samples, 1.0);
  ASSERT_TRUE(lag.has_value());
  EXPECT_NEAR(*lag, 0.8, 0.051);
  // Samples of the tick's own instant: no lag.
  for (DemandSample& d : samples) {
    d.concurrency = truth(d.t_s);
  }
  EXPECT_DOUBLE_EQ(ReportLag(records, samples, 1.0).value_or(-1), 0);
  samples.resize(10);
  EXPECT_FALSE(ReportLag(records, samples, 1.0).has_value());
}

// What the replay writes it reads back (--resimulate); a bad row is an
// error naming its line.
TEST(CsvTest, RequestsAndTimelineRoundTrip) {
  RequestRecord r;
  r.due_s = 1.5;
  r.sent_s = 1.501;
  r.first_byte_s = 12.25;
  r.done_s = 14;
  r.status = 200;
  r.body_ok = true;
  r.cold = true;
  r.held_s = 10.5;
  r.prompt_tokens = 4808;
  r.output_tokens = 10;
  RequestRecord lost;
  lost.due_s = 2;
  absl::StatusOr<std::vector<RequestRecord>> back =
      ParseRequestsCsv(RequestsCsv({r, lost}));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_DOUBLE_EQ((*back)[0].first_byte_s, 12.25);
  EXPECT_TRUE((*back)[0].cold && (*back)[0].body_ok);
  EXPECT_EQ((*back)[0].prompt_tokens, 4808u);
  EXPECT_EQ((*back)[1].status, 0);
  EXPECT_DOUBLE_EQ((*back)[1].first_byte_s, -1);

  absl::StatusOr<std::vector<TimelineSample>> tl =
      ParseTimelineCsv(TimelineCsv({{-0.5, 0, 0}, {3.25, 2, 1}}));
  ASSERT_TRUE(tl.ok()) << tl.status();
  ASSERT_EQ(tl->size(), 2u);
  EXPECT_DOUBLE_EQ((*tl)[1].t_s, 3.25);
  EXPECT_EQ((*tl)[1].replicas, 2);

  const absl::StatusOr<std::vector<TimelineSample>> bad =
      ParseTimelineCsv("t_s,replicas,ready\n1,2,3\n1,two,3\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("line 3"));
  EXPECT_FALSE(ParseRequestsCsv("h\n1,2,3\n").ok());
}

TEST(CompareTest, RelativeToTheSimulatedMedianWithItsSpread) {
  EXPECT_DOUBLE_EQ(RelativeDifference(110, 100), 0.1);
  EXPECT_DOUBLE_EQ(RelativeDifference(90, 100), -0.1);
  EXPECT_DOUBLE_EQ(RelativeDifference(0, 0), 0);
  EXPECT_DOUBLE_EQ(RelativeDifference(3, 0), 1);
  ReplaySummary live;
  live.replica_seconds = 120;
  live.cold_start_requests = 9;
  SimSpread sim;
  sim.median.replica_seconds = 100;
  sim.min.replica_seconds = 90;
  sim.max.replica_seconds = 110;
  sim.median.cold_start_requests = 10;
  sim.min.cold_start_requests = 8;
  sim.max.cold_start_requests = 12;
  const std::vector<ComparedRow> rows = Compare(live, sim);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[1].name, "replica-seconds");
  EXPECT_DOUBLE_EQ(rows[1].diff, 0.2);
  EXPECT_FALSE(rows[1].InSpread());  // 120 above 90-110
  EXPECT_EQ(rows[2].name, "cold-start requests");
  EXPECT_DOUBLE_EQ(rows[2].diff, -0.1);
  EXPECT_TRUE(rows[2].InSpread());  // 9 within 8-12
  // From every simulated run: 120 lies 1/11 above the highest; 9 lies
  // within; 72 lies 20 % below the lowest.
  EXPECT_DOUBLE_EQ(rows[1].BeyondSpread(), 10.0 / 110);
  EXPECT_DOUBLE_EQ(rows[2].BeyondSpread(), 0);
  ComparedRow below = rows[1];
  below.live = 72;
  EXPECT_DOUBLE_EQ(below.BeyondSpread(), -0.2);
  std::ostringstream out;
  PrintComparison(rows, out);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("+20.0% outside"));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("-10.0%\n"));
  const std::string html =
      ComparisonHtml("t", {{0, 1, 1}}, {{0, 2, 1}}, rows, 10);
  EXPECT_THAT(html, ::testing::HasSubstr("<polyline"));
  EXPECT_THAT(html, ::testing::HasSubstr("replica-seconds"));
  EXPECT_THAT(html, ::testing::HasSubstr("90 &ndash; 110"));
}

}  // namespace
}  // namespace pilotlight::tools
