#include "controller/policy/demand_history.h"

#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

absl::Time At(double s) {
  return absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(s);
}

// A linear ramp of 0.1/s rises 6 over a 60 s lead, every time.
TEST(RiseTrackerTest, RampRisesByRateTimesLead) {
  RiseTracker r;
  EXPECT_FALSE(r.Quantile(0.99).has_value());
  for (int t = 0; t <= 600; t += 2) {
    r.Record(At(t), 0.1 * t, absl::Seconds(60));
  }
  ASSERT_GE(r.count(), 8);
  EXPECT_NEAR(*r.Quantile(0.5), 6.0, 1.0);
  EXPECT_NEAR(*r.Quantile(0.99), 6.0, 1.0);
  EXPECT_EQ(r.FractionAbove(8.0), 0.0);
  EXPECT_EQ(r.FractionAbove(0.0), 1.0);
}

// Falls are not rises: a falling demand records zeros.
TEST(RiseTrackerTest, FallsRecordZero) {
  RiseTracker r;
  for (int t = 0; t <= 600; t += 2) {
    r.Record(At(t), 100 - 0.1 * t, absl::Seconds(60));
  }
  EXPECT_EQ(*r.Quantile(1.0), 0.0);
}

// A rise from a censored level is not recorded: the same ramp, with its
// first minute censored, records only the rises whose level one lead ago
// came after it.
TEST(RiseTrackerTest, RisesFromACensoredLevelAreNotRecorded) {
  RiseTracker all;
  RiseTracker censored;
  const absl::Time until = At(60);
  for (int t = 0; t <= 300; t += 2) {
    all.Record(At(t), 0.1 * t, absl::Seconds(60));
    censored.Record(At(t), 0.1 * t, absl::Seconds(60), until);
  }
  // A rise at t is from the level of (t - 70 s, t - 60 s]: recorded from
  // t = 60 s on (each 10 s) in the first, from t = 140 s in the second.
  EXPECT_EQ(all.count(), 25);
  EXPECT_EQ(censored.count(), 17);
  EXPECT_NEAR(*censored.Quantile(0.5), 6.0, 1.0);  // the same ramp
}

// After a day of a morning ramp, the profile predicts the ramp.
TEST(SeasonalProfileTest, RatioAfterOneDay) {
  SeasonalProfile p;
  const absl::Time day0 = absl::FromUnixSeconds(1'699'920'000);  // 00:00 UTC
  const auto level = [](int minute_of_day) {
    return minute_of_day < 8 * 60 ? 10.0 : 30.0;  // triples at 08:00
  };
  for (int m = 0; m < 24 * 60 + 30; ++m) {
    p.Record(day0 + absl::Minutes(m), level(m % (24 * 60)));
  }
  // Not yet a day old before 24 h.
  SeasonalProfile young;
  young.Record(day0, 1);
  EXPECT_FALSE(
      young.Ratio(day0 + absl::Hours(2), absl::Minutes(5)).has_value());
  // Day 2, 07:50, looking 15 min ahead: the 08:00 bin is 3x.
  const absl::Time t = day0 + absl::Hours(24 + 7) + absl::Minutes(50);
  EXPECT_NEAR(*p.Ratio(t, absl::Minutes(15)), 3.0, 1e-6);
  EXPECT_NEAR(*p.Ratio(t, absl::Minutes(1)), 1.0, 1e-6);
}

}  // namespace
}  // namespace pilotlight::policy
