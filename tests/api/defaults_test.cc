// One set of defaults: the CRD schemas (deploy/crds) and the code
// (the domain structs, which api/ falls back to) must agree, or an object
// the API server defaulted would behave unlike one it did not (e.g. read
// from a file, or by an older server). The test applies the schema's
// defaults as the API server does (a default fills a missing field of an
// object that is present; `default: {}` makes the object present) to
// minimal objects and parses both versions.
#include <yaml-cpp/yaml.h>

#include <string>

#include "controller/api/resources.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/yaml_json.h"

namespace pilotlight::api {
namespace {

using json = nlohmann::json;

using testutil::YamlToJson;

// The openAPIV3Schema of the CRD in `path`.
json Schema(const std::string& path) {
  const json crd = YamlToJson(YAML::LoadFile(path));
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

// Structural defaulting, as the API server applies it.
void ApplyDefaults(const json& schema, json& value) {
  if (value.is_object() && schema.contains("properties")) {
    for (const auto& [name, sub] : schema["properties"].items()) {
      if (!value.contains(name) && sub.contains("default")) {
        value[name] = sub["default"];
      }
      if (value.contains(name)) {
        ApplyDefaults(sub, value[name]);
      }
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (json& e : value) {
      ApplyDefaults(schema["items"], e);
    }
  }
}

json MinimalGpuClass() {
  return {{"metadata", {{"name", "l4"}}},
          {"spec",
           {{"gpu",
             {{"model", "L4-24GB"},
              {"memoryGiB", 22.5},
              {"bandwidthGBps", 300},
              {"fp16TFLOPS", 121}}},
            {"capacityType", "OnDemand"},
            {"pricePerGPUHour", 0.8}}}};
}

TEST(DefaultsTest, GpuClassSchemaDefaultsAreTheCodes) {
  json defaulted = MinimalGpuClass();
  ApplyDefaults(Schema("deploy/crds/pilotlight.dev_gpuclasses.yaml"),
                defaulted);
  ASSERT_NE(defaulted, MinimalGpuClass()) << "the schema has defaults";
  absl::StatusOr<GpuClassResource> a = ParseGpuClass(MinimalGpuClass());
  absl::StatusOr<GpuClassResource> b = ParseGpuClass(defaulted);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->gpu.vendor, b->gpu.vendor);
  EXPECT_EQ(a->gpu.bf16, b->gpu.bf16);
  EXPECT_EQ(a->gpu.fp8_tflops, b->gpu.fp8_tflops);
  EXPECT_EQ(a->gpu.int8_tops, b->gpu.int8_tops);
  EXPECT_EQ(a->gpu.interconnect, b->gpu.interconnect);
  EXPECT_EQ(a->gpu.interconnect_gbps, b->gpu.interconnect_gbps);
  EXPECT_EQ(a->gpu.host_link_gbps, b->gpu.host_link_gbps);
  EXPECT_EQ(a->gpu.max_gpus_per_node, b->gpu.max_gpus_per_node);
  EXPECT_EQ(a->cold_start.node_provisioning, b->cold_start.node_provisioning);
  EXPECT_EQ(a->cold_start.image_cached, b->cold_start.image_cached);
  EXPECT_EQ(a->cold_start.image_gib, b->cold_start.image_gib);
  EXPECT_EQ(a->cold_start.pull_gbps, b->cold_start.pull_gbps);
  EXPECT_EQ(a->cold_start.storage_gbps, b->cold_start.storage_gbps);
  EXPECT_EQ(a->cold_start.engine_init, b->cold_start.engine_init);
  EXPECT_EQ(a->node_selector, b->node_selector);
}

TEST(DefaultsTest, InferenceAutoscalerSchemaDefaultsAreTheCodes) {
  const json minimal = {
      {"metadata", {{"namespace", "ml"}, {"name", "chat"}}},
      {"spec",
       {{"model", {{"preset", "llama-3.1-8b"}}},
        {"variants", {{{"deployment", "chat-l4"}, {"gpuClass", "l4"}}}}}}};
  json defaulted = minimal;
  ApplyDefaults(Schema("deploy/crds/pilotlight.dev_inferenceautoscalers.yaml"),
                defaulted);
  ASSERT_NE(defaulted, minimal) << "the schema has defaults";
  const std::map<std::string, GpuClassResource> classes = {
      {"l4", *ParseGpuClass(MinimalGpuClass())}};
  absl::StatusOr<AutoscalerResource> a =
      ParseInferenceAutoscaler(minimal, classes);
  absl::StatusOr<AutoscalerResource> b =
      ParseInferenceAutoscaler(defaulted, classes);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  const policy::EndpointSpec& x = a->spec;
  const policy::EndpointSpec& y = b->spec;
  EXPECT_EQ(x.weights, y.weights);
  EXPECT_EQ(x.kv, y.kv);
  EXPECT_EQ(x.workload.context_tokens, y.workload.context_tokens);
  EXPECT_EQ(x.workload.prompt_tokens, y.workload.prompt_tokens);
  EXPECT_EQ(x.workload.output_tokens, y.workload.output_tokens);
  EXPECT_EQ(x.mode, y.mode);
  EXPECT_EQ(x.slo.ttft, y.slo.ttft);
  EXPECT_EQ(x.slo.tpot, y.slo.tpot);
  EXPECT_EQ(x.slo.max_cold_start_fraction, y.slo.max_cold_start_fraction);
  EXPECT_EQ(x.slo.cold_start_penalty_usd, y.slo.cold_start_penalty_usd);
  EXPECT_EQ(x.concurrency_per_replica, y.concurrency_per_replica);
  EXPECT_EQ(x.min_replicas, y.min_replicas);
  EXPECT_EQ(x.max_replicas, y.max_replicas);
  ASSERT_EQ(x.variants.size(), y.variants.size());
  EXPECT_EQ(x.variants[0].capacity, y.variants[0].capacity);
  EXPECT_EQ(x.variants[0].gpus_per_replica, y.variants[0].gpus_per_replica);
  EXPECT_EQ(a->metrics.server, b->metrics.server);
}

}  // namespace
}  // namespace pilotlight::api
