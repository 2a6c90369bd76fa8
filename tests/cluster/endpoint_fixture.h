// EndpointFixture: what the end-to-end tests of the controller and the
// activator share on the local test cluster -- a namespace of their own
// (deleted after), the CRDs and default GPUClasses applied, Deployments of
// model servers on the loopback kubelet's pool, InferenceAutoscalers, and
// the controller's flags with policy windows short enough for a test.
#pragma once

#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/kube_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/test_cluster.h"

namespace pilotlight::testcluster {

class EndpointFixture : public ::testing::Test {
 protected:
  using json = nlohmann::json;
  using KubeClient = kube::KubeClient;

  void SetUp() override {
    const std::optional<std::string> path = TestKubeconfig();
    if (!path) {
      GTEST_SKIP() << kNoCluster;
    }
    kubeconfig_ = *path;
    prometheus_ = TestPrometheusUrl();
    ASSERT_FALSE(prometheus_.empty());
    config_ = *kube::KubeConfigFromFile(kubeconfig_);
    kube_ = *KubeClient::Create(config_);
    const std::string applied = Shell(absl::StrCat(
        "kubectl --kubeconfig ", kubeconfig_,
        " apply --server-side --force-conflicts -f deploy/crds/ && kubectl "
        "--kubeconfig ",
        kubeconfig_,
        " wait --for condition=established --timeout=30s -f deploy/crds/ && "
        "kubectl --kubeconfig ",
        kubeconfig_, " apply --server-side -f deploy/gpuclasses/default.yaml"));
    ASSERT_THAT(applied,
                ::testing::HasSubstr("gpuclass.pilotlight.dev/l4-on-demand"));
    ns_ = absl::StrCat(
        "rt-", ::getpid(), "-",
        absl::AsciiStrToLower(
            ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ns_ = ns_.substr(0, 60);
    // A parametrised test's name ends in "/N": not a DNS label.
    for (char& c : ns_) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '-';
    }
    ASSERT_TRUE(
        Request("POST", "/api/v1/namespaces", {{"metadata", {{"name", ns_}}}})
            .ok());
  }
  void TearDown() override {
    if (kube_) {
      (void)kube_->Request("DELETE", "/api/v1/namespaces/" + ns_, "");
    }
  }

  absl::StatusOr<json> Request(const std::string& method,
                               const std::string& path,
                               const json& body = nullptr,
                               const std::string& ct = "application/json") {
    absl::StatusOr<KubeClient::Response> r =
        kube_->Request(method, path, body.is_null() ? "" : body.dump(), ct);
    if (!r.ok()) {
      return r.status();
    }
    return json::parse(r->body, nullptr, false);
  }

  std::vector<std::string> FastFlags() const {
    return {"--kubeconfig",
            kubeconfig_,
            "--prometheus",
            prometheus_,
            "--listen",
            "127.0.0.1:0",
            "--grpc-listen",
            "127.0.0.1:0",
            "--activator-grace",
            "0s",
            "--tick",
            "1s",
            "--rate-window",
            "10s",
            "--stable-window",
            "6s",
            "--panic-window",
            "2s",
            "--scale-down-stabilization",
            "6s",
            "--scale-to-zero-grace",
            "4s",
            "--stale-after",
            "10s"};
  }

  std::string LogPath(const std::string& what) const {
    return absl::StrCat(TestClusterDir().value_or("/tmp"), "/logs/", ns_, "-",
                        what, ".log");
  }

  // A Deployment of model servers on the loopback kubelet's pool.
  // `extra_args` go to the model server (e.g. {"--slowdown", "1.5"}).
  absl::Status CreateDeployment(
      const std::string& name, int replicas, const std::string& gpu_class,
      const std::string& capacity,
      const std::vector<std::string>& extra_args = {}) {
    json d = json::parse(R"({
      "apiVersion": "apps/v1", "kind": "Deployment",
      "spec": {
        "template": {
          "metadata": {"annotations": {"prometheus.io/scrape": "true",
                                       "prometheus.io/port": "8000",
                                       "pilotlight.dev/cold-start-seconds": "2"}},
          "spec": {
            "tolerations": [
              {"key": "pilotlight.dev/loopback", "operator": "Exists", "effect": "NoSchedule"},
              {"key": "karpenter.sh/capacity-type", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
              "ports": [{"containerPort": 8000}],
              "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})");
    d["metadata"]["name"] = name;
    d["spec"]["replicas"] = replicas;
    d["spec"]["selector"]["matchLabels"] = {{"app", "chat"}, {"variant", name}};
    d["spec"]["template"]["metadata"]["labels"] = {{"app", "chat"},
                                                   {"variant", name}};
    d["spec"]["template"]["spec"]["nodeSelector"] = {
        {"pilotlight.dev/loopback", "true"},
        {"pilotlight.dev/gpu-class", gpu_class},
        {"karpenter.sh/capacity-type", capacity}};
    json args = {"--model", "llama-3.1-8b",   "--gpu",
                 gpu_class, "--max-num-seqs", "2"};
    for (const std::string& a : extra_args) {
      args.push_back(a);
    }
    d["spec"]["template"]["spec"]["containers"][0]["args"] = args;
    return Request(
               "POST",
               absl::StrCat("/apis/apps/v1/namespaces/", ns_, "/deployments"),
               d)
        .status();
  }

  absl::Status CreateAutoscaler(const std::string& name, const json& spec) {
    return Request("POST",
                   absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/",
                                ns_, "/inferenceautoscalers"),
                   {{"apiVersion", "pilotlight.dev/v1alpha1"},
                    {"kind", "InferenceAutoscaler"},
                    {"metadata", {{"name", name}}},
                    {"spec", spec}})
        .status();
  }

  json Autoscaler(const std::string& name) {
    absl::StatusOr<json> j =
        Request("GET", absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/",
                                    ns_, "/inferenceautoscalers/", name));
    return j.ok() ? *j : json::object();
  }

  std::string Condition(const json& ia, const std::string& type,
                        std::string* reason = nullptr,
                        std::string* message = nullptr) {
    for (const json& c : ia.value("status", json::object())
                             .value("conditions", json::array())) {
      if (c.value("type", "") == type) {
        if (reason != nullptr) {
          *reason = c.value("reason", "");
        }
        if (message != nullptr) {
          *message = c.value("message", "");
        }
        return c.value("status", "");
      }
    }
    return "";
  }

  int Replicas(const std::string& deployment) {
    absl::StatusOr<json> d =
        Request("GET", absl::StrCat("/apis/apps/v1/namespaces/", ns_,
                                    "/deployments/", deployment));
    return d.ok() ? (*d)["spec"].value("replicas", -1) : -1;
  }
  // The test namespace's pods as the API server lists them (none when the
  // list fails).
  std::vector<json> Pods() {
    absl::StatusOr<json> l =
        Request("GET", absl::StrCat("/api/v1/namespaces/", ns_, "/pods"));
    return l.ok() ? l->value("items", std::vector<json>{})
                  : std::vector<json>{};
  }
  // Pods of `deployment` that still exist, terminating ones included (by
  // name: <deployment>-<hash>-<id>); -1 when the list fails. Zero only once
  // the last one has drained and gone: "at zero" for a request that must
  // wait for a new replica.
  int PodsOf(const std::string& deployment) {
    absl::StatusOr<json> l =
        Request("GET", absl::StrCat("/api/v1/namespaces/", ns_, "/pods"));
    if (!l.ok()) {
      return -1;
    }
    int n = 0;
    for (const json& p : (*l).value("items", json::array())) {
      if (absl::StartsWith(p["metadata"].value("name", ""),
                           absl::StrCat(deployment, "-"))) {
        ++n;
      }
    }
    return n;
  }
  int ReadyReplicas(const std::string& deployment) {
    absl::StatusOr<json> d =
        Request("GET", absl::StrCat("/apis/apps/v1/namespaces/", ns_,
                                    "/deployments/", deployment));
    return d.ok() ? (*d)["status"].value("readyReplicas", 0) : -1;
  }

  std::vector<std::string> EventReasons() {
    std::vector<std::string> reasons;
    absl::StatusOr<json> ev =
        Request("GET", absl::StrCat("/api/v1/namespaces/", ns_, "/events"));
    if (ev.ok()) {
      for (const json& e : (*ev)["items"]) {
        if (e["involvedObject"].value("kind", "") == "InferenceAutoscaler") {
          reasons.push_back(e.value("reason", ""));
        }
      }
    }
    return reasons;
  }

  static json Spec() {
    return json::parse(R"({
      "model": {"preset": "llama-3.1-8b", "maxContextTokens": 4096,
                "promptTokens": 128, "outputTokens": 32},
      "slo": {"maxColdStartFraction": 0.2},
      "concurrencyPerReplica": 2,
      "variants": [{"deployment": "chat-l4", "gpuClass": "l4-on-demand"},
                   {"deployment": "chat-a100", "gpuClass": "a100-80gb-spot"}],
      "replicas": {"min": 0, "max": 4}})");
  }

  // Spec() on one variant, chat-like, with `min` replicas.
  static json OneVariantSpec(const std::string& deployment, int min) {
    json spec = Spec();
    spec["variants"] = json::array(
        {{{"deployment", deployment}, {"gpuClass", "l4-on-demand"}}});
    spec["replicas"]["min"] = min;
    return spec;
  }

  // Applies deploy/rbac.yaml and writes a kubeconfig that authenticates as
  // service account pilotlight-system/`sa` (a bound token, as in a pod);
  // returns its path ("" on failure).
  std::string ServiceAccountKubeconfig(const std::string& sa) const {
    const std::string applied =
        Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_,
                           " apply --server-side -f deploy/rbac.yaml"));
    if (!absl::StrContains(applied,
                           "clusterrole.rbac.authorization.k8s.io/" + sa)) {
      ADD_FAILURE() << applied;
      return "";
    }
    const std::string token = std::string(absl::StripAsciiWhitespace(
        Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_,
                           " create token ", sa, " -n pilotlight-system"))));
    const std::string dir = TestClusterDir().value_or("/tmp");
    // Under run/, which tests/cluster/down removes.
    const std::string path =
        absl::StrCat(dir, "/run/", ns_, "-", sa, ".kubeconfig");
    std::ofstream out(path);
    out << "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: "
           "{server: \""
        << config_.server << "\", certificate-authority: \"" << dir
        << "/pki/ca.crt\"}}]\nusers: [{name: sa, user: {token: \"" << token
        << "\"}}]\ncontexts: [{name: c, context: {cluster: c, user: "
           "sa}}]\ncurrent-context: c\n";
    return path;
  }

  std::string kubeconfig_;
  std::string prometheus_;
  kube::KubeConfig config_;
  std::unique_ptr<KubeClient> kube_;
  std::string ns_;
};

}  // namespace pilotlight::testcluster
