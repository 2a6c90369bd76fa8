// The sleep pool's occupancy from the changes of its engines (pure; the
// replay's own changes are checked in simulator_test.cc).
#include "controller/sim/pool_occupancy.h"

#include <vector>

#include "gtest/gtest.h"

namespace pilotlight::sim {
namespace {

constexpr double kH = 3600;

PoolChange Asleep(double t, int8_t n) { return {.t = t, .asleep = n}; }
PoolChange Awake(double t, int8_t n) { return {.t = t, .awake = n}; }
// An engine woken: out of the asleep ones, awake on a GPU.
PoolChange Wake(double t) { return {.t = t, .asleep = -1, .awake = 1}; }

struct Case {
  const char* what;
  std::vector<PoolChange> changes;
  int engines_per_gpu;
  int gpus_per_engine;
  double from_s, to_s;
  PoolOccupancy want;
};

TEST(PoolOccupancyTest, GpusHoldTheEnginesAsleepAndOneAwakeEach) {
  const std::vector<Case> cases = {
      {"nothing slept", {}, 7, 1, 0, kH, {}},
      {"one engine asleep the whole hour: a GPU",
       {Asleep(0, 1)},
       7,
       1,
       0,
       kH,
       {.peak_asleep = 1, .peak_awake = 0, .peak_gpus = 1, .gpu_hours = 1}},
      {"8 asleep at 7 a GPU: two GPUs for the half hour they are",
       {Asleep(0, 7), Asleep(0.5 * kH, 1), Asleep(kH, -8)},
       7,
       1,
       0,
       2 * kH,
       {.peak_asleep = 8, .peak_gpus = 2, .gpu_hours = 1.5}},
      {"three woken of seven: a GPU each, though one holds them asleep",
       {Asleep(0, 7), Wake(0.5 * kH), Wake(0.5 * kH), Wake(0.5 * kH)},
       7,
       1,
       0,
       kH,
       {.peak_asleep = 7, .peak_awake = 3, .peak_gpus = 3, .gpu_hours = 2}},
      {"changes out of order, summed at their moment",
       {Awake(0.5 * kH, -1), Wake(0.25 * kH), Asleep(0, 2)},
       7,
       1,
       0,
       kH,
       {.peak_asleep = 2, .peak_awake = 1, .peak_gpus = 1, .gpu_hours = 1}},
      {"an engine of 2 GPUs (tensor-parallel) takes 2",
       {Asleep(0, 1)},
       4,
       2,
       0,
       kH,
       {.peak_asleep = 1, .peak_gpus = 2, .gpu_hours = 2}},
      {"only the window counts: 10 asleep before it, 1 in it",
       {Asleep(0, 10), Asleep(0.5 * kH, -9)},
       7,
       1,
       kH,
       2 * kH,
       {.peak_asleep = 1, .peak_gpus = 1, .gpu_hours = 1}},
      {"a pool that holds none: nothing", {Asleep(0, 1)}, 0, 1, 0, kH, {}},
  };
  for (const Case& c : cases) {
    const PoolOccupancy o = Occupancy(c.changes, c.engines_per_gpu,
                                      c.gpus_per_engine, c.from_s, c.to_s);
    EXPECT_EQ(o.peak_asleep, c.want.peak_asleep) << c.what;
    EXPECT_EQ(o.peak_awake, c.want.peak_awake) << c.what;
    EXPECT_EQ(o.peak_gpus, c.want.peak_gpus) << c.what;
    EXPECT_NEAR(o.gpu_hours, c.want.gpu_hours, 1e-9) << c.what;
  }
}

// The same changes through the controller's sizing rule: pods asked for
// every 10 s, Ready 100 s later, kept a minute past the busiest moment.
TEST(PoolOccupancyTest, APoolSizedByTheRuleFollowsItsEnginesLate) {
  const policy::PoolSizerConfig rule{.spare_pods = 1,
                                     .scale_down_window = absl::Minutes(1)};
  struct SizedCase {
    const char* what;
    std::vector<PoolChange> changes;
    SizedPool want;
  };
  const std::vector<SizedCase> cases = {
      {"engines asleep only: the spare pod, Ready all along",
       {Asleep(0, 3)},
       {.peak_pods = 1, .gpu_hours = 1}},
      {"one wake takes the spare; a second is asked for at the next tick "
       "(0.5 h) and held a minute past the engine's sleep",
       {Asleep(0, 3), Wake(0.5 * kH), Awake(0.75 * kH, -1),
        Asleep(0.75 * kH, 1)},
       // 1 pod all hour + 1 from 0.5 h until a minute after the last tick
       // that saw the engine awake (0.75 h - 10 s; ticks at 0, 10, ... s).
       {.peak_pods = 2, .gpu_hours = 1 + (0.25 * kH + 50) / kH}},
      {"two wakes at once: the second finds no pod free until a new one is "
       "Ready 100 s after the tick that asks for it",
       {Asleep(0, 3), Wake(0.5 * kH), Wake(0.5 * kH), Awake(kH, -2)},
       {.peak_pods = 3,
        .gpu_hours = 1 + 2 * 0.5,
        .wakes_without_a_free_pod = 1,
        .engine_seconds_short = 100}},
  };
  for (const SizedCase& c : cases) {
    const SizedPool p =
        Sized(c.changes, 7, 1, rule, /*pod_start_s=*/100, /*tick_s=*/10, 0, kH);
    EXPECT_EQ(p.peak_pods, c.want.peak_pods) << c.what;
    EXPECT_NEAR(p.gpu_hours, c.want.gpu_hours, 1e-9) << c.what;
    EXPECT_EQ(p.wakes_without_a_free_pod, c.want.wakes_without_a_free_pod)
        << c.what;
    EXPECT_NEAR(p.engine_seconds_short, c.want.engine_seconds_short, 1e-9)
        << c.what;
  }
}

}  // namespace
}  // namespace pilotlight::sim
