#include "controller/api/resources.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/files.h"

namespace pilotlight::api {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

json L4Spot() {
  return json::parse(R"({
    "apiVersion": "pilotlight.dev/v1alpha1", "kind": "GPUClass",
    "metadata": {"name": "l4-spot"},
    "spec": {"gpu": {"model": "L4-24GB", "memoryGiB": 22.5,
                     "bandwidthGBps": 300, "fp16TFLOPS": 121,
                     "fp8TFLOPS": 242.5},
             "capacityType": "Spot", "pricePerGPUHour": 0.32,
             "nodeSelector": {"karpenter.sh/capacity-type": "spot"},
             "provisioning": {"nodeStartSeconds": 90, "storageGBps": 2}}})");
}

json Autoscaler() {
  return json::parse(R"({
    "apiVersion": "pilotlight.dev/v1alpha1", "kind": "InferenceAutoscaler",
    "metadata": {"name": "chat", "namespace": "ml", "generation": 3,
                 "uid": "u-1"},
    "spec": {"model": {"preset": "llama-3.1-8b"},
             "variants": [{"deployment": "chat-l4", "gpuClass": "l4-spot"}]}})");
}

std::map<std::string, GpuClassResource> Classes() {
  absl::StatusOr<GpuClassResource> c = ParseGpuClass(L4Spot());
  EXPECT_TRUE(c.ok()) << c.status();
  return {{"l4-spot", *c}};
}

TEST(GpuClassTest, ParsesSpecsPriceCapacityAndProvisioning) {
  absl::StatusOr<GpuClassResource> c = ParseGpuClass(L4Spot());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->gpu.name, "l4-spot");
  EXPECT_EQ(c->capacity, policy::CapacityType::kSpot);
  EXPECT_DOUBLE_EQ(c->gpu.price_spot_per_gpu_hour, 0.32);
  EXPECT_DOUBLE_EQ(c->gpu.memory_gib, 22.5);
  EXPECT_DOUBLE_EQ(c->gpu.int8_tops, 0);  // absent: no INT8 tensor cores
  EXPECT_EQ(c->cold_start.node_provisioning, absl::Seconds(90));
  EXPECT_DOUBLE_EQ(c->cold_start.storage_gbps, 2);
  EXPECT_EQ(c->cold_start.engine_init, absl::Seconds(30));  // the default
  EXPECT_EQ(c->node_selector.at("karpenter.sh/capacity-type"), "spot");
}

TEST(GpuClassTest, ErrorsNameTheField) {
  json j = L4Spot();
  j["spec"]["gpu"].erase("memoryGiB");
  EXPECT_THAT(std::string(ParseGpuClass(j).status().message()),
              HasSubstr("spec.gpu.memoryGiB: required"));
  j = L4Spot();
  j["spec"]["pricePerGPUHour"] = "cheap";
  EXPECT_THAT(std::string(ParseGpuClass(j).status().message()),
              HasSubstr("spec.pricePerGPUHour: want a number"));
  j = L4Spot();
  j["spec"]["capacityType"] = "Reserved";
  EXPECT_THAT(std::string(ParseGpuClass(j).status().message()),
              HasSubstr("spec.capacityType: \"Reserved\""));
}

TEST(AutoscalerTest, DefaultsFillWhatTheServerWouldHave) {
  absl::StatusOr<AutoscalerResource> a =
      ParseInferenceAutoscaler(Autoscaler(), Classes());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->spec.name, "ml/chat");
  EXPECT_EQ(a->generation, 3);
  EXPECT_EQ(a->spec.mode, policy::Mode::kRealtime);
  EXPECT_EQ(a->spec.slo.ttft, absl::Seconds(2));
  EXPECT_EQ(a->spec.min_replicas, 0);
  EXPECT_EQ(a->spec.max_replicas, 16);
  ASSERT_EQ(a->spec.variants.size(), 1U);
  EXPECT_EQ(a->spec.variants[0].capacity, policy::CapacityType::kSpot);
  EXPECT_EQ(a->spec.variants[0].cold_start.node_provisioning,
            absl::Seconds(90));
  EXPECT_EQ(a->metrics.server, prom::MetricsServer::kVllm);
  EXPECT_FALSE(a->spec.slo.max_keep_alive_cost_per_day_usd.has_value());
}

// A GPUClass's billing period reaches every variant on it; unset, the
// controller's applies; nonsense is refused with the field.
TEST(GpuClassTest, BillingGranularityReachesTheVariants) {
  EXPECT_FALSE(ParseGpuClass(L4Spot())->billing_granularity.has_value());
  json hourly = L4Spot();
  hourly["spec"]["billingGranularitySeconds"] = 3600;
  absl::StatusOr<GpuClassResource> c = ParseGpuClass(hourly);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->billing_granularity, absl::Hours(1));
  absl::StatusOr<AutoscalerResource> a =
      ParseInferenceAutoscaler(Autoscaler(), {{"l4-spot", *c}});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->spec.variants[0].billing_granularity, absl::Hours(1));
  hourly["spec"]["billingGranularitySeconds"] = 0;
  EXPECT_THAT(std::string(ParseGpuClass(hourly).status().message()),
              HasSubstr("spec.billingGranularitySeconds"));
}

TEST(AutoscalerTest, KeepAliveSpendBoundIsRead) {
  json ia = Autoscaler();
  ia["spec"]["slo"] = {{"maxKeepAliveCostPerDayUSD", 12.5}};
  absl::StatusOr<AutoscalerResource> a =
      ParseInferenceAutoscaler(ia, Classes());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->spec.slo.max_keep_alive_cost_per_day_usd, 12.5);
  ia["spec"]["slo"]["maxKeepAliveCostPerDayUSD"] = "lots";
  a = ParseInferenceAutoscaler(ia, Classes());
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("maxKeepAliveCostPerDayUSD"));
}

// spec.sleepPool is optional; given, it names a Deployment of its own and
// a port, and nonsense is refused with the field.
TEST(AutoscalerTest, SleepPoolIsReadAndChecked) {
  absl::StatusOr<AutoscalerResource> a =
      ParseInferenceAutoscaler(Autoscaler(), Classes());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->sleep_pool.has_value());
  json ia = Autoscaler();
  ia["spec"]["sleepPool"] = {{"deployment", "pool-l4"}, {"port", 8001}};
  a = ParseInferenceAutoscaler(ia, Classes());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->sleep_pool.has_value());
  EXPECT_EQ(a->sleep_pool->deployment, "pool-l4");
  EXPECT_EQ(a->sleep_pool->port, 8001);
  EXPECT_EQ(a->sleep_pool->gpu_class, "l4-spot") << "the first variant's";
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"deployment", "pool-l4"}}, "spec.sleepPool.port: want 1-65535"},
      {{{"deployment", "pool-l4"}, {"port", 70000}}, "got 70000"},
      {{{"deployment", "pool-l4"}, {"port", "8001"}}, "want an integer"},
      {{{"port", 8001}}, "spec.sleepPool.deployment: required"},
      {{{"deployment", "pool-l4"}, {"port", 8001}, {"gpuClass", "h100"}},
       "spec.sleepPool.gpuClass: GPUClass \"h100\" not found"},
      {{{"deployment", ia["spec"]["variants"][0]["deployment"]},
        {"port", 8001}},
       "is one of the endpoint's variants"},
  };
  for (const auto& [pool, want] : bad) {
    ia["spec"]["sleepPool"] = pool;
    a = ParseInferenceAutoscaler(ia, Classes());
    ASSERT_FALSE(a.ok()) << pool.dump();
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(want))
        << pool.dump();
  }
}

TEST(AutoscalerTest, WhatTheSchemaCannotSayIsRefusedWithTheField) {
  json j = Autoscaler();
  j["spec"]["variants"][0]["gpuClass"] = "h100-spot";
  absl::StatusOr<AutoscalerResource> a = ParseInferenceAutoscaler(j, Classes());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("spec.variants[0].gpuClass: GPUClass \"h100-spot\""));

  j = Autoscaler();
  j["spec"]["model"]["preset"] = "gpt-17";
  EXPECT_THAT(
      std::string(ParseInferenceAutoscaler(j, Classes()).status().message()),
      HasSubstr("spec.model.preset"));

  // A 70B model does not fit one 24 GB GPU.
  j = Autoscaler();
  j["spec"]["model"]["preset"] = "llama-3.1-70b";
  a = ParseInferenceAutoscaler(j, Classes());
  EXPECT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("variants[0]"));

  j = Autoscaler();
  j["spec"]["metrics"] = {{"server", "custom"}};
  EXPECT_THAT(
      std::string(ParseInferenceAutoscaler(j, Classes()).status().message()),
      HasSubstr("spec.metrics.concurrencyQuery: required"));
}

// charts/pilotlight/files/gpuclasses/default.yaml (rendered into
// deploy/gpuclasses/default.yaml) is `pilotlight gpuclasses`: they must not
// drift apart, and every object must parse back to its catalog entry.
TEST(DefaultGpuClassesTest, CommittedFileIsTheGeneratorOutput) {
  absl::StatusOr<model::Catalog> catalog = model::Catalog::Default();
  ASSERT_TRUE(catalog.ok());
  testutil::ExpectGenerated(
      "charts/pilotlight/files/gpuclasses/default.yaml",
      DefaultGpuClassesYaml(*catalog),
      "`pilotlight gpuclasses` (then run scripts/render-deploy)");

  int spot = 0;
  for (const model::GpuClass& c : catalog->classes()) {
    absl::StatusOr<GpuClassResource> od =
        ParseGpuClass(GpuClassObject(c, policy::CapacityType::kOnDemand));
    ASSERT_TRUE(od.ok()) << od.status();
    EXPECT_EQ(od->gpu.name, c.name + "-on-demand");
    EXPECT_DOUBLE_EQ(od->gpu.price_on_demand_per_gpu_hour,
                     c.price_on_demand_per_gpu_hour);
    EXPECT_DOUBLE_EQ(od->gpu.bandwidth_gbps, c.bandwidth_gbps);
    EXPECT_DOUBLE_EQ(od->gpu.host_memory_gib_per_gpu,
                     c.host_memory_gib_per_gpu);
    EXPECT_EQ(od->gpu.interconnect, c.interconnect);
    if (c.price_spot_per_gpu_hour > 0) {
      ++spot;
      absl::StatusOr<GpuClassResource> s =
          ParseGpuClass(GpuClassObject(c, policy::CapacityType::kSpot));
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ(s->capacity, policy::CapacityType::kSpot);
      EXPECT_EQ(s->node_selector.at("karpenter.sh/capacity-type"), "spot");
    }
  }
  EXPECT_GT(spot, 0);
}

}  // namespace
}  // namespace pilotlight::api
