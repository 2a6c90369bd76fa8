#include "controller/policy/time_window.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

absl::Time At(double s) {
  return absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(s);
}

struct Rec {
  double at_s;
  double value;
};

// Window averages over the buckets that hold data, by hand.
TEST(TimeBucketsTest, AverageTable) {
  struct Case {
    const char* purpose;
    std::vector<Rec> records;
    double now_s;
    double window_s;
    std::optional<double> want;
  };
  const Case cases[] = {
      {"empty window has no average", {}, 10, 60, std::nullopt},
      {"one bucket", {{5, 4}}, 10, 60, 4.0},
      {"same bucket values are averaged first",
       {{5, 2}, {5.5, 4}, {6, 9}},
       10,
       60,
       (3.0 + 9.0) / 2},
      {"missing buckets are not zeros", {{0, 10}, {30, 20}}, 59, 60, 15.0},
      {"old buckets fall out", {{0, 100}, {50, 2}}, 70, 60, 2.0},
      {"panic window sees only the last 6 s",
       {{0, 1}, {55, 1}, {58, 7}},
       59,
       6,
       4.0},
      {"future buckets are ignored", {{80, 5}, {10, 1}}, 20, 60, 1.0},
  };
  for (const Case& c : cases) {
    TimeBuckets w(absl::Seconds(60), absl::Seconds(1));
    for (const Rec& r : c.records) {
      w.Record(At(r.at_s), r.value);
    }
    std::optional<double> got =
        w.Average(At(c.now_s), absl::Seconds(c.window_s));
    ASSERT_EQ(got.has_value(), c.want.has_value()) << c.purpose;
    if (c.want) {
      EXPECT_DOUBLE_EQ(*got, *c.want) << c.purpose;
    }
  }
}

// Slots are reused when time wraps the ring; a stale slot never leaks in.
TEST(TimeBucketsTest, RingReuseAfterWrap) {
  TimeBuckets w(absl::Seconds(10), absl::Seconds(1));
  for (int i = 0; i < 10; ++i) {
    w.Record(At(i), 100);
  }
  w.Record(At(23), 1);  // same slot as t = 3 and 13
  EXPECT_EQ(w.Average(At(23), absl::Seconds(10)), 1.0);
  EXPECT_EQ(w.Max(At(23), absl::Seconds(10)), 1.0);
}

// The least-squares slope of a ramp is its rate; a flat line has slope 0.
TEST(TimeBucketsTest, Slope) {
  TimeBuckets w(absl::Seconds(60), absl::Seconds(1));
  EXPECT_FALSE(w.Slope(At(0), absl::Seconds(60)).has_value());
  for (int i = 0; i < 30; ++i) {
    w.Record(At(i), 2.0 * i + 5);
  }
  EXPECT_NEAR(w.Slope(At(29), absl::Seconds(60))->slope, 2.0, 1e-6);
  EXPECT_NEAR(w.Slope(At(29), absl::Seconds(60))->r2, 1.0, 1e-6);
  TimeBuckets flat(absl::Seconds(60), absl::Seconds(1));
  for (int i = 0; i < 30; ++i) {
    flat.Record(At(i), 7);
  }
  EXPECT_NEAR(flat.Slope(At(29), absl::Seconds(60))->slope, 0.0, 1e-6);
  // A step is a poor line: R^2 well below a ramp's.
  TimeBuckets step(absl::Seconds(60), absl::Seconds(1));
  for (int i = 0; i < 60; ++i) {
    step.Record(At(i), i < 50 ? 0 : 100);
  }
  EXPECT_LT(step.Slope(At(59), absl::Seconds(60))->r2, 0.8);
}

// WindowedMax keeps each bucket's maximum, not its mean.
TEST(WindowedMaxTest, MaxOverWindow) {
  WindowedMax m(absl::Minutes(10), absl::Seconds(10));
  EXPECT_FALSE(m.Max(At(0), absl::Seconds(60)).has_value());
  m.Record(At(0), 4);
  m.Record(At(1), 2);  // same bucket: max stays 4
  m.Record(At(30), 3);
  EXPECT_EQ(m.Max(At(30), absl::Seconds(60)), 4.0);
  EXPECT_EQ(m.Max(At(65), absl::Seconds(60)), 3.0);  // the 4 is too old
  EXPECT_EQ(m.Max(At(200), absl::Seconds(60)), std::nullopt);
}

// Buckets are numbered from the first one recorded (8 bytes each): times
// before it, a ring wrapped many times over and a year later still land
// in their own buckets.
TEST(WindowedMaxTest, RelativeBucketsBeforeAndLongAfterTheFirst) {
  WindowedMax m(absl::Seconds(60), absl::Seconds(10));
  m.Record(At(1000), 5);
  m.Record(At(990), 7);  // before the first: its own bucket
  EXPECT_EQ(m.Max(At(1000), absl::Seconds(20)), 7.0);
  EXPECT_EQ(m.Max(At(1000), absl::Seconds(10)), 5.0);
  const absl::Time later = At(1000) + absl::Hours(24 * 365);
  m.Record(later, 2);
  EXPECT_EQ(m.Max(later, absl::Seconds(60)), 2.0);  // the old ones expired
  m.Record(later + absl::Seconds(10), 9);
  EXPECT_EQ(m.Max(later + absl::Seconds(10), absl::Seconds(20)), 9.0);
  EXPECT_EQ(m.Max(later + absl::Seconds(60), absl::Seconds(60)), 9.0);
  EXPECT_EQ(m.Max(later + absl::Seconds(70), absl::Seconds(60)), std::nullopt);
}

}  // namespace
}  // namespace pilotlight::policy
