#include "controller/policy/idle_histogram.h"

#include <vector>

#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

using Basis = IdleHistogram::Basis;

// The hybrid-histogram windows for hand-computed gap patterns.
TEST(IdleHistogramTest, WindowsTable) {
  struct Case {
    const char* purpose;
    std::vector<double> gaps_min;
    Basis basis;
    double prewarm_min;
    double warm_until_min;
  };
  std::vector<double> periodic(20, 17.2);  // a timer every ~17 minutes
  std::vector<double> short_gaps(50, 0.5);
  std::vector<double> mixed(95, 3.4);  // bins 3 and 8
  mixed.insert(mixed.end(), 5, 8.1);
  std::vector<double> spread;  // one gap in every bin
  for (int i = 0; i < 240; ++i) {
    spread.push_back(i + 0.5);
  }
  std::vector<double> daily(10, 60.0 * 24);  // beyond the 4 h range
  const Case cases[] = {
      {"too few gaps: no pre-warm, whole range",
       {17, 17},
       Basis::kTooFewSamples,
       0,
       240},
      // head = tail = bin 17: pre-warm 17 x 0.9, warm until 18 x 1.1.
      {"periodic: pre-warm just before the next request", periodic,
       Basis::kHistogram, 17 * 0.9, 18 * 1.1},
      {"short gaps: keep warm, no pre-warm", short_gaps, Basis::kHistogram, 0,
       1 * 1.1},
      // 5th percentile in bin 3, 99th in bin 8.
      {"two modes: head of the first, tail of the second", mixed,
       Basis::kHistogram, 3 * 0.9, 9 * 1.1},
      {"no pattern: not representative", spread, Basis::kNotRepresentative, 0,
       240},
      // EWMA of equal gaps = the gap; 15 % margins.
      {"out of range: predict from the long gaps", daily, Basis::kOutOfRange,
       1440 * 0.85, 1440 * 1.15},
  };
  for (const Case& c : cases) {
    IdleHistogram h;
    for (double g : c.gaps_min) {
      h.Record(absl::Seconds(g * 60));
    }
    const IdleHistogram::Windows w = h.Compute();
    EXPECT_EQ(w.basis, c.basis) << c.purpose;
    EXPECT_NEAR(absl::ToDoubleMinutes(w.prewarm), c.prewarm_min, 1e-6)
        << c.purpose;
    EXPECT_NEAR(absl::ToDoubleMinutes(w.warm_until), c.warm_until_min, 1e-6)
        << c.purpose;
  }
}

// Counts halve past the cap, so a new pattern takes over.
TEST(IdleHistogramTest, ForgetsOldPattern) {
  IdleHistogram h;
  for (int i = 0; i < 1500; ++i) {
    h.Record(absl::Minutes(5));
  }
  for (int i = 0; i < 5000; ++i) {
    h.Record(absl::Minutes(40));
  }
  EXPECT_LE(h.samples(), IdleHistogram::kMaxSamples);
  const IdleHistogram::Windows w = h.Compute();
  EXPECT_NEAR(absl::ToDoubleMinutes(w.prewarm), 40 * 0.9, 1e-6);
}

}  // namespace
}  // namespace pilotlight::policy
