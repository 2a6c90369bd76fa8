#include "controller/model/sleep.h"

#include <gtest/gtest.h>

#include <string>

#include "controller/model/catalog.h"
#include "controller/model/sizing.h"

namespace pilotlight::model {
namespace {

GpuClass Pool(double memory_gib, double host_gib, double link_gbps) {
  GpuClass g;
  g.name = "pool";
  g.memory_gib = memory_gib;
  g.host_memory_gib_per_gpu = host_gib;
  g.host_link_gbps = link_gbps;
  g.price_on_demand_per_gpu_hour = 4.0;
  return g;
}

struct SleepCase {
  std::string name;
  double weight_bytes_per_gpu;
  int tp;
  GpuClass gpu;
  double wake_s;
  int engines_per_gpu;
  double asleep_price_per_hour;
};

TEST(SleepTest, WakeOverTheHostLinkAndEnginesBoundByHostAndGpuMemory) {
  const SleepCase cases[] = {
      // 16 GB over 32 GB/s x 0.8 = 0.625 s + 0.5 s resume. The node's
      // 160 GiB less 20 % holds 8 of them (137.4 GB); the GPU's free 10 %
      // holds 16 contexts of 0.5 GiB: 8 asleep, $4/h over 8.
      {"host-bound", 16e9, 1, Pool(80, 160, 32), 1.125, 8, 0.5},
      // A 10 GiB GPU leaves 1 GiB beside the awake engine: two contexts.
      // Two GPUs per replica: 2 x $4/h over 2.
      {"gpu-bound", 1e9, 2, Pool(10, 1000, 32), 1e9 / 25.6e9 + 0.5, 2, 4.0},
      // The node's memory not known: it wakes as fast, but nothing sleeps.
      {"host-unknown", 16e9, 1, Pool(80, 0, 32), 1.125, 0, 0},
      // Weights larger than the node's memory left.
      {"too-large", 200e9, 1, Pool(80, 160, 32), 200e9 / 25.6e9 + 0.5, 0, 0},
      // A 70B replica's shard per GPU at TP 4 over PCIe Gen5: 219.9 GB of
      // the node holds 6; 4 GPUs x $4/h over 6.
      {"tp-shard", 35e9, 4, Pool(80, 256, 64), 35e9 / 51.2e9 + 0.5, 6,
       16.0 / 6},
  };
  for (const SleepCase& c : cases) {
    SCOPED_TRACE(c.name);
    const SleepEstimate e =
        EstimateSleep(c.weight_bytes_per_gpu, c.tp, c.gpu, {});
    EXPECT_NEAR(absl::ToDoubleSeconds(e.wake), c.wake_s, 1e-6);
    EXPECT_EQ(e.engines_per_gpu, c.engines_per_gpu);
    EXPECT_NEAR(e.asleep_price_per_hour, c.asleep_price_per_hour, 1e-9);
  }
}

TEST(SleepTest, SizingReportsColdStartWakeAndTheShareAsleep) {
  absl::StatusOr<Catalog> catalog = Catalog::Default();
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  SizingRequest r;
  absl::StatusOr<ModelProfile> m = FindPreset("llama-3.1-8b");
  ASSERT_TRUE(m.ok()) << m.status();
  r.model = *m;
  r.gpu_classes = {"a100-80gb", "l4"};
  absl::StatusOr<SizingReport> rep = Size(r, *catalog);
  ASSERT_TRUE(rep.ok()) << rep.status();
  const SizingOption* a100 = nullptr;
  const SizingOption* l4 = nullptr;
  for (const SizingOption& o : rep->options) {
    if (o.tensor_parallel == 1 && o.gpu_class == "a100-80gb") {
      a100 = &o;
    }
    if (o.tensor_parallel == 1 && o.gpu_class == "l4") {
      l4 = &o;
    }
  }
  ASSERT_NE(a100, nullptr);
  ASSERT_NE(l4, nullptr);
  // 16.06 GB: a cold start loads it at 3 GB/s and starts the engine (30 s);
  // a wake copies it over PCIe Gen4 and resumes.
  EXPECT_NEAR(a100->cold_start_s, 16.06e9 / 3e9 + 30, 0.05);
  EXPECT_NEAR(a100->wake_s, 16.06e9 / 25.6e9 + 0.5, 0.01);
  // p4de: 144 GiB a GPU, 80 % of it holds 7 copies.
  EXPECT_EQ(a100->sleeping_per_gpu, 7);
  EXPECT_NEAR(a100->asleep_price_per_hour,
              a100->price_per_hour / a100->sleeping_per_gpu, 1e-9);
  // g6.xlarge's 16 GiB cannot hold 15 GiB of weights beside the system.
  EXPECT_EQ(l4->sleeping_per_gpu, 0);
  EXPECT_EQ(l4->asleep_price_per_hour, 0);
}

}  // namespace
}  // namespace pilotlight::model
