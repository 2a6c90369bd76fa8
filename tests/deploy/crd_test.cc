// The custom resources on the real API server (label integration, local
// test cluster): deploy/crds and the default GPUClasses apply with
// `kubectl apply --server-side`, defaults are filled in, and objects the
// schema or its CEL rules forbid are refused with a message that says why.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/kube/kube_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/test_cluster.h"

namespace pilotlight::kube {
namespace {

using json = nlohmann::json;
using testcluster::Shell;
using testcluster::WaitFor;
using ::testing::HasSubstr;

class CrdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::optional<std::string> path = testcluster::TestKubeconfig();
    if (!path) {
      return;
    }
    kubeconfig_ = new std::string(*path);
    int rc = 0;
    apply_output_ = new std::string(Shell(
        absl::StrCat(
            "kubectl --kubeconfig ", *path,
            " apply --server-side --force-conflicts -f deploy/crds/ && kubectl "
            "--kubeconfig ",
            *path,
            " wait --for condition=established --timeout=30s "
            "-f deploy/crds/ && kubectl --kubeconfig ",
            *path,
            " apply --server-side -f "
            "deploy/gpuclasses/default.yaml"),
        &rc));
    apply_rc_ = rc;
  }

  void SetUp() override {
    if (kubeconfig_ == nullptr) {
      GTEST_SKIP() << testcluster::kNoCluster;
    }
    ASSERT_EQ(apply_rc_, 0) << *apply_output_;
    client_ = *KubeClient::Create(*KubeConfigFromFile(*kubeconfig_));
  }

  // POSTs an InferenceAutoscaler in `default` with `spec`.
  absl::StatusOr<KubeClient::Response> CreateAutoscaler(const std::string& name,
                                                        const json& spec) {
    const json obj = {{"apiVersion", "pilotlight.dev/v1alpha1"},
                      {"kind", "InferenceAutoscaler"},
                      {"metadata", {{"name", name}}},
                      {"spec", spec}};
    return client_->Request(
        "POST",
        "/apis/pilotlight.dev/v1alpha1/namespaces/default/inferenceautoscalers",
        obj.dump());
  }

  static json ValidSpec() {
    return json::parse(R"({"model": {"preset": "llama-3.1-8b"},
      "variants": [{"deployment": "chat-l4", "gpuClass": "l4-spot"},
                   {"deployment": "chat-a100", "gpuClass": "a100-80gb-on-demand"}]})");
  }

  static std::string* kubeconfig_;
  static std::string* apply_output_;
  static int apply_rc_;
  std::unique_ptr<KubeClient> client_;
};
std::string* CrdTest::kubeconfig_ = nullptr;
std::string* CrdTest::apply_output_ = nullptr;
int CrdTest::apply_rc_ = 0;

TEST_F(CrdTest, DefaultGpuClassesApplyAndListWithPrinterColumns) {
  absl::StatusOr<KubeClient::Response> r = client_->Request(
      "GET", "/apis/pilotlight.dev/v1alpha1/gpuclasses/l4-spot", "");
  ASSERT_TRUE(r.ok()) << r.status();
  const json c = json::parse(r->body);
  EXPECT_EQ(c["spec"]["capacityType"], "Spot");
  EXPECT_EQ(c["spec"]["provisioning"]["nodeStartSeconds"], 120);  // default
  int rc = 0;
  const std::string out =
      Shell(absl::StrCat("kubectl --kubeconfig ", *kubeconfig_,
                         " get gpuclasses a100-80gb-spot"),
            &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("PRICE/GPU-H"));
  EXPECT_THAT(out, HasSubstr("A100-80GB-SXM"));
}

TEST_F(CrdTest, ValidAutoscalerGetsItsDefaults) {
  absl::StatusOr<KubeClient::Response> r =
      CreateAutoscaler("valid", ValidSpec());
  ASSERT_TRUE(r.ok()) << r.status();
  const json ia = json::parse(r->body);
  EXPECT_EQ(ia["spec"]["replicas"]["min"], 0);
  EXPECT_EQ(ia["spec"]["replicas"]["max"], 16);
  EXPECT_EQ(ia["spec"]["slo"]["ttftSeconds"], 2);
  EXPECT_EQ(ia["spec"]["mode"], "Realtime");
  EXPECT_EQ(ia["spec"]["metrics"]["server"], "vllm");
  EXPECT_EQ(ia["spec"]["variants"][1]["gpusPerReplica"], 1);
  int rc = 0;
  const std::string out = Shell(
      absl::StrCat("kubectl --kubeconfig ", *kubeconfig_, " get ia valid"),
      &rc);
  ASSERT_EQ(rc, 0) << out;
  for (const char* column :
       {"ONDEMAND", "SPOT", "TIER", "KEEPALIVE", "COST/H", "READY", "AGE"}) {
    EXPECT_THAT(out, HasSubstr(column));
  }
  (void)client_->Request("DELETE",
                         "/apis/pilotlight.dev/v1alpha1/namespaces/default/"
                         "inferenceautoscalers/valid",
                         "");
}

TEST_F(CrdTest, InvalidAutoscalersAreRefusedWithAClearMessage) {
  struct Case {
    const char* name;
    const char* patch;  // merged into ValidSpec()
    const char* message;
  };
  const Case cases[] = {
      {"min-over-max", R"({"replicas": {"min": 5, "max": 2}})",
       "replicas.min must not exceed replicas.max"},
      {"no-variants", R"({"variants": []})", "spec.variants"},
      {"duplicate-deployments",
       R"({"variants": [{"deployment": "a", "gpuClass": "l4-spot"},
                        {"deployment": "a", "gpuClass": "l4-on-demand"}]})",
       "each variant must name a different deployment"},
      {"zero-ttft", R"({"slo": {"ttftSeconds": 0}})", "spec.slo.ttftSeconds"},
      {"negative-tpot", R"({"slo": {"tpotSeconds": -1}})",
       "spec.slo.tpotSeconds"},
      {"cold-fraction-over-1", R"({"slo": {"maxColdStartFraction": 2}})",
       "spec.slo.maxColdStartFraction"},
      // The policy needs room for warm requests: 1 is refused here, as the
      // parser refuses it (policy/endpoint_spec.cc), not left to fail later.
      {"cold-fraction-of-1", R"({"slo": {"maxColdStartFraction": 1}})",
       "spec.slo.maxColdStartFraction"},
      {"custom-without-queries", R"({"metrics": {"server": "custom"}})",
       "metrics.server custom needs concurrencyQuery and arrivalRateQuery"},
      {"unknown-mode", R"({"mode": "Fast"})", "spec.mode"},
      {"no-model", R"({"model": null})", "spec.model"},
  };
  for (const Case& c : cases) {
    json spec = ValidSpec();
    spec.merge_patch(json::parse(c.patch));
    absl::StatusOr<KubeClient::Response> r = CreateAutoscaler(c.name, spec);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << c.name << ": " << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message))
        << c.name;
  }
}

TEST_F(CrdTest, InvalidGpuClassIsRefused) {
  const json spot_free = json::parse(R"({
    "apiVersion": "pilotlight.dev/v1alpha1", "kind": "GPUClass",
    "metadata": {"name": "free-spot"},
    "spec": {"gpu": {"model": "X", "memoryGiB": 16, "bandwidthGBps": 300,
                     "fp16TFLOPS": 50},
             "capacityType": "Spot", "pricePerGPUHour": 0}})");
  absl::StatusOr<KubeClient::Response> r = client_->Request(
      "POST", "/apis/pilotlight.dev/v1alpha1/gpuclasses", spot_free.dump());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("a Spot class needs a pricePerGPUHour above 0"));
  json no_memory = spot_free;
  no_memory["metadata"]["name"] = "no-memory";
  no_memory["spec"]["pricePerGPUHour"] = 1;
  no_memory["spec"]["gpu"].erase("memoryGiB");
  r = client_->Request("POST", "/apis/pilotlight.dev/v1alpha1/gpuclasses",
                       no_memory.dump());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("spec.gpu.memoryGiB: Required value"));
}

}  // namespace
}  // namespace pilotlight::kube
