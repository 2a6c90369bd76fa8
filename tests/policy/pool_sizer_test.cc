// Table tests of the sleep pool's size with explicit times: busy pods plus
// a spare, at once up, down only after the window, what the engines asleep
// need in memory, and the bounds.
#include "controller/policy/pool_sizer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

absl::Time T(double s) {
  return absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(s);
}

TEST(PoolSizerTest, BusyPodsAndASpareHeldForTheWindow) {
  struct Step {
    double at_s;
    PoolNeed need;
    int pods;
  };
  struct Case {
    std::string name;
    PoolSizerConfig config;
    std::vector<Step> steps;
  };
  const PoolSizerConfig two_min{.spare_pods = 1,
                                .scale_down_window = absl::Minutes(2)};
  const std::vector<Case> cases = {
      {"idle: the least, one pod for the engines asleep",
       two_min,
       {{0, {0, 1}, 1}, {10, {0, 0}, 1}}},
      {"a wake takes the spare: one more at once",
       two_min,
       {{0, {0, 1}, 1}, {2, {1, 1}, 2}, {4, {3, 1}, 4}}},
      {"down only once the window's busiest moment has passed",
       two_min,
       {{0, {3, 1}, 4},
        {60, {1, 1}, 4},
        {119, {0, 1}, 4},
        {120, {0, 1}, 2},  // the 3 busy at 0 s left the window; 1 at 60 s
        {180, {0, 1}, 1}}},
      {"a rise inside the window restarts its hold",
       two_min,
       {{0, {2, 1}, 3},
        {100, {2, 1}, 3},
        {150, {0, 1}, 3},
        {219, {0, 1}, 3},
        {220, {0, 1}, 1}}},
      {"the engines asleep need more pods than the busy ones",
       two_min,
       {{0, {1, 5}, 5}, {10, {5, 5}, 6}}},
      {"no spare asked: busy pods only, the least one",
       {.spare_pods = 0, .scale_down_window = absl::Minutes(2)},
       {{0, {0, 0}, 1}, {5, {2, 1}, 2}}},
      {"the most caps it",
       {.spare_pods = 1, .scale_down_window = absl::Minutes(2), .max_pods = 3},
       {{0, {5, 1}, 3}}},
      {"the least raises it",
       {.spare_pods = 1, .scale_down_window = absl::Minutes(2), .min_pods = 4},
       {{0, {1, 1}, 4}}},
  };
  for (const Case& c : cases) {
    PoolSizer sizer(c.config);
    for (const Step& s : c.steps) {
      const PoolSize got = sizer.Size(T(s.at_s), s.need);
      EXPECT_EQ(got.pods, s.pods)
          << c.name << " at " << s.at_s << " s (" << got.reason << ")";
      EXPECT_FALSE(got.reason.empty()) << c.name;
    }
  }
}

TEST(PoolSizerTest, ReasonSaysWhatSetTheSize) {
  PoolSizer sizer({.spare_pods = 1, .scale_down_window = absl::Minutes(2)});
  EXPECT_EQ(sizer.Size(T(0), {2, 1}).reason, "3 pod(s): 2 busy + 1 spare");
  EXPECT_EQ(sizer.Size(T(30), {0, 1}).reason,
            "3 pod(s): kept from the busiest moment of the last 2m (0 busy + "
            "1 spare now)");
}

}  // namespace
}  // namespace pilotlight::policy
