// The replay's arithmetic on hand-worked records: the replica integral, the
// live summary, and the comparison's relative differences.
#include "tests/tools/replay/replay.h"

#include <sstream>

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

TEST(CompareTest, RelativeToTheSimulatedSide) {
  EXPECT_DOUBLE_EQ(RelativeDifference(110, 100), 0.1);
  EXPECT_DOUBLE_EQ(RelativeDifference(90, 100), -0.1);
  EXPECT_DOUBLE_EQ(RelativeDifference(0, 0), 0);
  EXPECT_DOUBLE_EQ(RelativeDifference(3, 0), 1);
  ReplaySummary live;
  live.replica_seconds = 120;
  live.cold_start_requests = 9;
  ReplaySummary sim;
  sim.replica_seconds = 100;
  sim.cold_start_requests = 10;
  const std::vector<ComparedRow> rows = Compare(live, sim);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[1].name, "replica-seconds");
  EXPECT_DOUBLE_EQ(rows[1].diff, 0.2);
  EXPECT_EQ(rows[2].name, "cold-start requests");
  EXPECT_DOUBLE_EQ(rows[2].diff, -0.1);
  std::ostringstream out;
  PrintComparison(rows, out);
  EXPECT_THAT(out.str(), ::testing::HasSubstr("+20.0%"));
  const std::string html =
      ComparisonHtml("t", {{0, 1, 1}}, {{0, 2, 1}}, rows, 10);
  EXPECT_THAT(html, ::testing::HasSubstr("<polyline"));
  EXPECT_THAT(html, ::testing::HasSubstr("replica-seconds"));
}

}  // namespace
}  // namespace pilotlight::tools
