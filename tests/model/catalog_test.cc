#include "controller/model/catalog.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::model {
namespace {

using ::testing::HasSubstr;

constexpr absl::string_view kOneClass = R"(
apiVersion: pilotlight.dev/v1alpha1
kind: GPUCatalog
classes:
- name: x1
  gpu: {model: X1, memoryGiB: 24, bandwidthGBps: 600, fp16TFLOPS: 100,
        fp8TFLOPS: 200}
  interconnect: {kind: PCIe, GBps: 32}
  hostLinkGBps: 32
  pricePerGPUHour: {onDemand: 1.0, spot: 0.4}
  nodeLabels: {pool: x1}
)";

// The shipped catalog parses and covers the classes the docs promise, each
// with a source note and the documented precision support.
TEST(CatalogTest, DefaultCatalogCoversRequiredClasses) {
  absl::StatusOr<Catalog> c = Catalog::Default();
  ASSERT_TRUE(c.ok()) << c.status();
  for (const char* name :
       {"t4", "l4", "a10g", "l40s", "a100-40gb", "a100-80gb", "h100-80gb-sxm",
        "h100-80gb-pcie", "h200", "b200", "mi300x"}) {
    const GpuClass* g = c->Find(name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_FALSE(g->source.empty()) << name;
    EXPECT_FALSE(g->node_labels.empty()) << name;
    EXPECT_GT(g->host_memory_gib_per_gpu, 0) << name;
  }
  // Spot-checks against the vendors' datasheets (each class's `source` in
  // controller/model/data).
  const GpuClass& h100 = **c->Get("h100-80gb-sxm");
  EXPECT_DOUBLE_EQ(h100.bandwidth_gbps, 3350);
  EXPECT_DOUBLE_EQ(h100.fp16_tflops, 989);
  EXPECT_EQ(h100.interconnect, InterconnectKind::kNvlink);
  EXPECT_DOUBLE_EQ(h100.price_on_demand_per_gpu_hour, 6.88);
  const GpuClass& t4 = **c->Get("t4");
  EXPECT_FALSE(t4.SupportsWeights(Precision::kBf16));
  EXPECT_TRUE(t4.SupportsWeights(Precision::kFp16));
  EXPECT_FALSE(t4.SupportsWeights(Precision::kFp8));
  EXPECT_TRUE(t4.SupportsWeights(Precision::kInt4));
  const GpuClass& a100 = **c->Get("a100-80gb");
  EXPECT_FALSE(a100.SupportsWeights(Precision::kFp8));
  EXPECT_TRUE(a100.SupportsWeights(Precision::kInt8));
  EXPECT_DOUBLE_EQ(a100.ComputeTflops(Precision::kInt4), 312);
}

// A user catalog of the same shape loads; optional fields take defaults.
TEST(CatalogTest, ParsesUserCatalog) {
  absl::StatusOr<Catalog> c = Catalog::FromYaml(kOneClass, "mine.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->classes().size(), 1u);
  const GpuClass& g = c->classes()[0];
  EXPECT_EQ(g.name, "x1");
  EXPECT_EQ(g.vendor, "NVIDIA");
  EXPECT_TRUE(g.bf16);
  EXPECT_EQ(g.max_gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(g.int8_tops, 0);
  EXPECT_DOUBLE_EQ(g.price_spot_per_gpu_hour, 0.4);
  EXPECT_EQ(g.node_labels.at("pool"), "x1");
}

// Bad catalogs are refused with the entry, the field and the problem.
TEST(CatalogTest, RejectsBadInput) {
  struct Row {
    const char* what;
    std::string yaml;
    const char* expect;
  };
  const std::string base(kOneClass);
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const Row rows[] = {
      {"not yaml", "classes: [", "not valid YAML"},
      {"not a catalog", "- 1\n- 2\n", "expected a GPUCatalog"},
      {"wrong kind", "kind: Pod\nclasses: []\n", "expected \"GPUCatalog\""},
      {"no classes", "kind: GPUCatalog\nclasses: []\n", "has no classes"},
      {"zero bandwidth", replace("bandwidthGBps: 600", "bandwidthGBps: 0"),
       "classes[0] (x1).gpu.bandwidthGBps: 0 is out of range"},
      {"negative memory", replace("memoryGiB: 24", "memoryGiB: -8"),
       "gpu.memoryGiB: -8 is out of range"},
      {"text for a number", replace("fp16TFLOPS: 100", "fp16TFLOPS: lots"),
       "gpu.fp16TFLOPS: \"lots\" is not a number"},
      {"missing price",
       replace("  pricePerGPUHour: {onDemand: 1.0, spot: 0.4}\n", ""),
       "missing mapping \"pricePerGPUHour\""},
      {"bad interconnect", replace("kind: PCIe", "kind: Smoke"),
       "interconnect.kind: \"Smoke\" is not one of"},
      {"negative spot", replace("spot: 0.4", "spot: -1"),
       "pricePerGPUHour.spot: -1 is out of range"},
      {"negative host memory",
       replace("hostLinkGBps: 32",
               "hostLinkGBps: 32\n  hostMemoryGiBPerGPU: -1"),
       "hostMemoryGiBPerGPU: -1 is out of range"},
      {"duplicate", base + base.substr(base.find("- name")), "duplicate class"},
  };
  for (const Row& r : rows) {
    absl::StatusOr<Catalog> c = Catalog::FromYaml(r.yaml, "mine.yaml");
    ASSERT_FALSE(c.ok()) << r.what;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(r.expect))
        << r.what;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("mine.yaml"))
        << r.what;
  }
}

// Looking up an unknown class lists the known names.
TEST(CatalogTest, UnknownClassListsNames) {
  absl::StatusOr<Catalog> c = Catalog::Default();
  ASSERT_TRUE(c.ok());
  absl::StatusOr<const GpuClass*> g = c->Get("v100");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(g.status().message()),
              HasSubstr("known: t4, a10g, l4"));
}

}  // namespace
}  // namespace pilotlight::model
