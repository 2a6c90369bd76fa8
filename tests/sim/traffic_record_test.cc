#include "controller/sim/traffic_record.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::sim {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

// A look every `tick` from `from` to `to` (inclusive of `from`).
void LookEvery(TrafficRecord& r, double from, double to, double tick = 2) {
  for (double t = from; t <= to; t += tick) {
    r.Observe(At(t));
  }
}

TEST(TrafficRecordTest, SparseRequestsReplayAtTheirSeconds) {
  TrafficRecord r;
  r.Observe(At(0));
  const std::vector<double> times = {5.2, 5.7, 90.1, 3600.4};
  double looked = 0;
  for (double t : times) {
    LookEvery(r, looked, t);
    looked = t;
    r.AddRequest(At(t), 1000, 200);
  }
  r.Observe(At(3601));
  EXPECT_EQ(r.arrivals(), 4);
  EXPECT_EQ(r.ArrivalsBetween(At(0), At(6)), 2);
  EXPECT_EQ(r.ArrivalsBetween(At(6), At(3600)), 1);
  const EndpointTrace t = r.Replay(At(0), At(3601), "ep");
  ASSERT_EQ(t.requests.size(), 4U);
  // Two in second 5 at its quarter and three quarters, one in the middle
  // of each other second.
  EXPECT_DOUBLE_EQ(t.requests[0].arrival_s, 5.25);
  EXPECT_DOUBLE_EQ(t.requests[1].arrival_s, 5.75);
  EXPECT_DOUBLE_EQ(t.requests[2].arrival_s, 90.5);
  EXPECT_DOUBLE_EQ(t.requests[3].arrival_s, 3600.5);
  // 1000 tokens: bucket [512, 1024), its middle scaled to the mean.
  EXPECT_EQ(t.requests[0].input_tokens, 1000U);
  EXPECT_EQ(t.requests[0].output_tokens, 200U);
  EXPECT_EQ(t.name, "ep");
  EXPECT_LT(r.bytes(), 1024);
}

// A tick's count is spread over the seconds since the previous look: put
// in one second it would replay burstier than the traffic came.
TEST(TrafficRecordTest, CountsFromALookSpreadOverTheSecondsSinceTheLast) {
  TrafficRecord r;
  r.Add(At(0), 7);  // the first look: since when is unknown, left out
  r.Add(At(2), 3);
  r.Add(At(4), 0);
  r.Add(At(6), 5);
  r.Add(At(7), 4);
  EXPECT_EQ(r.arrivals(), 12);
  EXPECT_EQ(r.ArrivalsBetween(At(1), At(2)), 1);
  EXPECT_EQ(r.ArrivalsBetween(At(2), At(3)), 2);
  EXPECT_EQ(r.ArrivalsBetween(At(3), At(5)), 0);
  EXPECT_EQ(r.ArrivalsBetween(At(5), At(6)), 2);
  EXPECT_EQ(r.ArrivalsBetween(At(6), At(7)), 3);
  EXPECT_EQ(r.ArrivalsBetween(At(7), At(8)), 4);  // one second: all in it
  EXPECT_EQ(r.Covered(), absl::Seconds(7));
}

TEST(TrafficRecordTest, AGapRestartsCoverageAndItsCountIsLeftOut) {
  TrafficRecordOptions o;
  o.max_look_gap = absl::Seconds(30);
  TrafficRecord r(o);
  LookEvery(r, 0, 100);
  r.AddRequest(At(50), 10, 10);
  EXPECT_EQ(r.Covered(), absl::Seconds(100));
  // Nobody looked for 10 minutes (a leader change): 40 arrivals came.
  r.Add(At(700), 40);
  EXPECT_EQ(r.gaps(), 1);
  EXPECT_EQ(r.covered_since(), At(700));
  EXPECT_EQ(r.Covered(), absl::ZeroDuration());
  EXPECT_EQ(r.arrivals(), 1);  // the 40 have no time of their own
  LookEvery(r, 702, 760);
  EXPECT_EQ(r.Covered(), absl::Seconds(60));
}

TEST(TrafficRecordTest, AClockJumpBackClearsTheRecord) {
  TrafficRecord r;
  LookEvery(r, 0, 20);
  r.AddRequest(At(10), 10, 10);
  r.Observe(At(5));
  EXPECT_EQ(r.clock_jumps(), 1);
  EXPECT_EQ(r.arrivals(), 0);
  EXPECT_EQ(r.Covered(), absl::ZeroDuration());
  EXPECT_TRUE(r.Replay(At(0), At(20), "ep").requests.empty());
}

TEST(TrafficRecordTest, TheWindowDropsWhatIsOlder) {
  TrafficRecordOptions o;
  o.window = absl::Minutes(10);
  TrafficRecord r(o);
  for (int t = 0; t <= 1200; t += 2) {
    r.Observe(At(t));
    if (t % 60 == 0) {
      r.AddRequest(At(t), 10, 10);
    }
  }
  EXPECT_EQ(r.covered_since(), At(600));
  EXPECT_EQ(r.Covered(), absl::Minutes(10));
  EXPECT_EQ(r.arrivals(), 11);  // 600, 660, ..., 1200
  EXPECT_EQ(r.ArrivalsBetween(At(0), At(600)), 0);
}

TEST(TrafficRecordTest, ABusyEndpointStaysWithinItsBytesAndKeepsTheNewest) {
  TrafficRecordOptions o;
  o.max_bytes = 16 << 10;
  TrafficRecord r(o);
  // 50 requests every second for 6 hours: two bytes a second, so about
  // two hours fit in 16 KiB.
  for (int s = 0; s < 6 * 3600; ++s) {
    r.Observe(At(s));
    r.Add(At(s), 50);
  }
  EXPECT_LE(r.bytes(), o.max_bytes);
  EXPECT_GT(r.Covered(), absl::Hours(1));
  EXPECT_LT(r.Covered(), absl::Hours(3));
  // Every second still held is whole.
  const absl::Time from = r.covered_since();
  const int64_t held = r.ArrivalsBetween(from, At(6 * 3600));
  EXPECT_EQ(held, r.arrivals());
  EXPECT_EQ(held % 50, 0);
  EXPECT_EQ(held, 50 * absl::ToInt64Seconds(At(6 * 3600) - from));
}

TEST(TrafficRecordTest, ReplayIsTheSameEveryCallAndFollowsTheSizes) {
  TrafficRecord r;
  r.Observe(At(0));
  for (int i = 0; i < 1000; ++i) {
    // A quarter of the prompts long.
    r.AddRequest(At(i), i % 4 == 0 ? 8000 : 500, 100);
  }
  r.Observe(At(1000));
  const EndpointTrace a = r.Replay(At(0), At(1000), "ep");
  const EndpointTrace b = r.Replay(At(0), At(1000), "ep");
  ASSERT_EQ(a.requests.size(), 1000U);
  int long_prompts = 0;
  for (size_t i = 0; i < a.requests.size(); ++i) {
    EXPECT_EQ(a.requests[i].arrival_s, b.requests[i].arrival_s);
    EXPECT_EQ(a.requests[i].input_tokens, b.requests[i].input_tokens);
    long_prompts += a.requests[i].input_tokens > 4096 ? 1 : 0;
  }
  EXPECT_NEAR(long_prompts, 250, 10);
}

// Counts from looks and sizes from completions (the engines' histograms)
// come apart; a replay puts the sizes on the counted arrivals.
TEST(TrafficRecordTest, SizesRecordedApartSizeTheReplay) {
  TrafficRecord r;
  EXPECT_FALSE(r.has_sizes());
  r.Add(At(0), 0);
  r.Add(At(2), 4);
  for (int i = 0; i < 4; ++i) {
    r.AddSize(3000, 50);
  }
  EXPECT_TRUE(r.has_sizes());
  EXPECT_EQ(r.arrivals(), 4);  // sizes are not arrivals
  const EndpointTrace t = r.Replay(At(0), At(4), "ep");
  ASSERT_EQ(t.requests.size(), 4U);
  for (const Request& q : t.requests) {
    // [2048, 4096) and [32, 64): the middles scaled to the recorded mean.
    EXPECT_EQ(q.input_tokens, 3000U);
    EXPECT_EQ(q.output_tokens, 50U);
  }
}

// A histogram's buckets are a factor 2 wide: their middles would overstate
// sizes at a bucket's low end by half (1,024-token prompts replayed as
// 1,536). The replay keeps the recorded mean, and the spread between
// buckets; prompt and output sizes are drawn apart.
TEST(TrafficRecordTest, ReplayedSizesKeepTheRecordedMean) {
  TrafficRecord r;
  r.Observe(At(0));
  for (int i = 0; i < 400; ++i) {
    r.AddRequest(At(i), i % 2 == 0 ? 1024 : 4096, i % 2 == 0 ? 256 : 20);
  }
  r.Observe(At(400));
  const EndpointTrace t = r.Replay(At(0), At(400), "ep");
  ASSERT_EQ(t.requests.size(), 400U);
  double in = 0;
  double out = 0;
  int long_prompts = 0;
  int long_with_long_output = 0;
  for (const Request& q : t.requests) {
    in += q.input_tokens;
    out += q.output_tokens;
    long_prompts += q.input_tokens > 2048 ? 1 : 0;
    long_with_long_output +=
        q.input_tokens > 2048 && q.output_tokens > 128 ? 1 : 0;
  }
  EXPECT_NEAR(in / 400, (1024 + 4096) / 2.0, 30);
  EXPECT_NEAR(out / 400, (256 + 20) / 2.0, 3);
  EXPECT_NEAR(long_prompts, 200, 4);
  // Drawn apart: about half the long prompts get long outputs (one walk
  // would pair every long prompt with the long outputs).
  EXPECT_GT(long_with_long_output, 60);
  EXPECT_LT(long_with_long_output, 140);
}

}  // namespace
}  // namespace pilotlight::sim
