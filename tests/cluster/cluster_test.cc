// The local test cluster, end to end (label integration; ctest brings the
// cluster up once for all of them through the cluster_up fixture): the
// real API server at its pinned version, kubectl with the written
// kubeconfig, GPU node pools, the loopback kubelet running model-server
// processes with truthful pod conditions, Prometheus discovering and
// scraping them, scale to zero and back.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controller/kube/kube_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/test_cluster.h"

namespace pilotlight::kube {
namespace {

using json = nlohmann::json;
using testcluster::Shell;
using testcluster::WaitFor;
using ::testing::HasSubstr;

constexpr int kColdStartSeconds = 2;

absl::Time ParseTime(const std::string& s) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, s, &t, &err)) << s << err;
  return t;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::optional<std::string> path = testcluster::TestKubeconfig();
    if (!path) {
      GTEST_SKIP() << testcluster::kNoCluster;
    }
    kubeconfig_ = *path;
    absl::StatusOr<KubeConfig> c = KubeConfigFromFile(kubeconfig_);
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<std::unique_ptr<KubeClient>> client = KubeClient::Create(*c);
    ASSERT_TRUE(client.ok()) << client.status();
    kube_ = std::move(*client);
    ns_ = absl::StrCat(
        "ct-", ::getpid(), "-",
        absl::AsciiStrToLower(
            ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ASSERT_TRUE(
        Post("/api/v1/namespaces", {{"metadata", {{"name", ns_}}}}).ok());
  }
  void TearDown() override {
    if (kube_) {
      (void)kube_->Request("DELETE", "/api/v1/namespaces/" + ns_, "");
    }
  }

  absl::StatusOr<json> Get(const std::string& path) {
    absl::StatusOr<KubeClient::Response> r = kube_->Request("GET", path, "");
    if (!r.ok()) {
      return r.status();
    }
    return json::parse(r->body);
  }
  absl::Status Post(const std::string& path, const json& body) {
    return kube_->Request("POST", path, body.dump()).status();
  }

  // A Deployment of `replicas` model servers on the loopback kubelet's
  // `gpu_class` on-demand node, with a 2 s cold start.
  json LoopbackDeployment(const std::string& name, int replicas,
                          const std::string& gpu_class) {
    return json::parse(absl::StrCat(R"({
      "apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": ")",
                                    name, R"("},
      "spec": {
        "replicas": )",
                                    replicas, R"(,
        "selector": {"matchLabels": {"app": ")",
                                    name, R"("}},
        "template": {
          "metadata": {
            "labels": {"app": ")",
                                    name, R"("},
            "annotations": {"prometheus.io/scrape": "true",
                            "prometheus.io/port": "8000",
                            "pilotlight.dev/cold-start-seconds": ")",
                                    kColdStartSeconds, R"("}},
          "spec": {
            "nodeSelector": {"pilotlight.dev/loopback": "true",
                             "pilotlight.dev/gpu-class": ")",
                                    gpu_class, R"(",
                             "karpenter.sh/capacity-type": "on-demand"},
            "tolerations": [{"key": "pilotlight.dev/loopback",
                             "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{
              "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
              "args": ["--model", "llama-3.1-8b", "--gpu", ")",
                                    gpu_class, R"(",
                       "--time-scale", "0.05"],
              "ports": [{"containerPort": 8000}],
              "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})"));
  }

  // The pods of app=`app` that are Ready (not being deleted).
  std::vector<json> ReadyPods(const std::string& app) {
    std::vector<json> ready;
    absl::StatusOr<json> pods = Get(absl::StrCat(
        "/api/v1/namespaces/", ns_, "/pods?labelSelector=app%3D", app));
    if (!pods.ok()) {
      return ready;
    }
    for (const json& p : (*pods)["items"]) {
      if (p["metadata"].contains("deletionTimestamp")) {
        continue;
      }
      for (const json& c : p["status"].value("conditions", json::array())) {
        if (c["type"] == "Ready" && c["status"] == "True") {
          ready.push_back(p);
        }
      }
    }
    return ready;
  }

  size_t PodCount(const std::string& app) {
    absl::StatusOr<json> pods = Get(absl::StrCat(
        "/api/v1/namespaces/", ns_, "/pods?labelSelector=app%3D", app));
    return pods.ok() ? (*pods)["items"].size() : 999;
  }

  absl::Status Scale(const std::string& name, int replicas) {
    return kube_
        ->Request("PATCH",
                  absl::StrCat("/apis/apps/v1/namespaces/", ns_,
                               "/deployments/", name, "/scale"),
                  json{{"spec", {{"replicas", replicas}}}}.dump(),
                  "application/merge-patch+json")
        .status();
  }

  std::string kubeconfig_;
  std::unique_ptr<KubeClient> kube_;
  std::string ns_;
};

TEST_F(ClusterTest, ApiServerAnswersWithThePinnedVersion) {
  absl::StatusOr<json> v = Get("/version");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ((*v)["gitVersion"], "v" PILOTLIGHT_K8S_VERSION);
}

TEST_F(ClusterTest, KubectlWorksWithTheWrittenKubeconfig) {
  int rc = 0;
  const std::string out = Shell(
      absl::StrCat("kubectl --kubeconfig ", kubeconfig_, " get nodes -o json"),
      &rc);
  ASSERT_EQ(rc, 0) << out;
  int ready = 0;
  std::set<std::string> pools;
  const json nodes = json::parse(out);
  for (const json& n : nodes["items"]) {
    const std::string name = n["metadata"].value("name", "");
    for (const json& c : n["status"]["conditions"]) {
      ready += c["type"] == "Ready" && c["status"] == "True" ? 1 : 0;
    }
    pools.insert(
        name.substr(0, name.rfind('-')) + "/" +
        n["metadata"]["labels"].value("karpenter.sh/capacity-type", ""));
    EXPECT_TRUE(n["status"]["allocatable"].contains("nvidia.com/gpu"))
        << name << ": no nvidia.com/gpu";
  }
  // kwok's pools (two nodes each) and the loopback kubelet's (one each).
  EXPECT_GE(ready, 12);
  EXPECT_THAT(
      pools,
      ::testing::IsSupersetOf(
          {"gpu-l4-on-demand/on-demand", "gpu-l4-spot/spot",
           "gpu-a100-80gb-on-demand/on-demand", "gpu-a100-80gb-spot/spot",
           "loopback-l4-on-demand/on-demand", "loopback-a100-80gb-spot/spot"}));
}

// The heart of it: 3 model-server pods Running and Ready with condition
// times that tell the cold start, answering OpenAI requests (streamed or
// not) at their pod IPs, scraped by Prometheus, scaled to 0 and back.
TEST_F(ClusterTest, LoopbackModelServersRunScrapeAndScaleToZeroAndBack) {
  const absl::Time created = absl::Now();
  ASSERT_TRUE(
      Post(absl::StrCat("/apis/apps/v1/namespaces/", ns_, "/deployments"),
           LoopbackDeployment("llm", 3, "l4"))
          .ok());
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return ReadyPods("llm").size() == 3;
  })) << "3 pods did not become Ready";
  std::vector<json> pods = ReadyPods("llm");
  std::set<std::string> ips;
  for (const json& p : pods) {
    const std::string name = p["metadata"]["name"];
    absl::Time scheduled;
    absl::Time ready;
    for (const json& c : p["status"]["conditions"]) {
      if (c["type"] == "PodScheduled") {
        scheduled = ParseTime(c["lastTransitionTime"]);
      } else if (c["type"] == "Ready") {
        ready = ParseTime(c["lastTransitionTime"]);
      }
    }
    // Condition times have one-second resolution: the cold start shows as
    // 1-3 s of the 2 s delay, never as 0 and never after "now".
    EXPECT_GE(scheduled, absl::FromUnixSeconds(absl::ToUnixSeconds(created)))
        << name;
    EXPECT_GE(ready - scheduled, absl::Seconds(kColdStartSeconds - 1)) << name;
    EXPECT_LE(ready - scheduled, absl::Seconds(kColdStartSeconds + 10)) << name;
    EXPECT_LE(ready, absl::Now()) << name;
    EXPECT_EQ(p["status"]["phase"], "Running") << name;
    EXPECT_EQ(p["spec"]["nodeName"], "loopback-l4-on-demand-0") << name;
    const std::string ip = p["status"]["podIP"];
    // Its own loopback address, not the node's.
    EXPECT_TRUE(absl::StartsWith(ip, "127.") && ip != "127.0.0.1")
        << name << " " << ip;
    ips.insert(ip);
  }
  ASSERT_EQ(ips.size(), 3U) << "pod IPs are not distinct";

  // Each pod's model server answers at its own address.
  for (const std::string& ip : ips) {
    httplib::Client http(ip, 8000);
    http.set_read_timeout(10, 0);
    httplib::Result r =
        http.Post("/v1/completions",
                  R"({"model":"llama-3.1-8b","prompt":"hello","max_tokens":4})",
                  "application/json");
    ASSERT_TRUE(r) << ip << ": " << httplib::to_string(r.error());
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["choices"].size(), 1U) << r->body;
  }
  {
    httplib::Client http(*ips.begin(), 8000);
    http.set_read_timeout(10, 0);
    int data_lines = 0;
    std::string body;
    httplib::Result r =
        http.Post("/v1/chat/completions", httplib::Headers{},
                  R"({"model":"llama-3.1-8b","stream":true,"max_tokens":5,
            "messages":[{"role":"user","content":"hi"}]})",
                  "application/json");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    body = r->body;
    for (absl::string_view line : absl::StrSplit(body, '\n')) {
      data_lines += absl::StartsWith(line, "data: ") ? 1 : 0;
    }
    EXPECT_EQ(r->get_header_value("Content-Type").rfind("text/event-stream", 0),
              0U);
    EXPECT_GE(data_lines, 6) << body;  // 5 tokens, then [DONE]
    EXPECT_THAT(body, HasSubstr("data: [DONE]"));
  }

  // Prometheus finds the pods through the API server and scrapes them.
  const std::string prom = testcluster::TestPrometheusUrl();
  ASSERT_FALSE(prom.empty()) << "no run/prometheus.url in the cluster dir";
  std::set<std::string> scraped;
  std::string last_answer;
  EXPECT_TRUE(
      WaitFor(absl::Seconds(30),
              [&] {
                httplib::Client http(prom);
                httplib::Result r = http.Get(
                    "/api/v1/query?query=" +
                    httplib::detail::encode_query_param(absl::StrCat(
                        "vllm:num_requests_running{namespace=\"", ns_, "\"}")));
                if (!r || r->status != 200) {
                  last_answer = r ? r->body : httplib::to_string(r.error());
                  return false;
                }
                last_answer = r->body;
                scraped.clear();
                const json answer = json::parse(r->body);
                for (const json& s : answer["data"]["result"]) {
                  scraped.insert(s["metric"].value("pod", ""));
                }
                return scraped.size() == 3;
              }))
      << "Prometheus has vllm:num_requests_running for " << scraped.size()
      << " pods; its last answer: " << last_answer;

  // Scale to zero: the pods go and their processes with them.
  ASSERT_TRUE(Scale("llm", 0).ok());
  EXPECT_TRUE(WaitFor(absl::Seconds(30), [&] { return PodCount("llm") == 0; }))
      << "pods left after scaling to 0";
  for (const std::string& ip : ips) {
    httplib::Client http(ip, 8000);
    http.set_connection_timeout(1, 0);
    EXPECT_FALSE(http.Get("/health")) << ip << " still answers";
  }
  // And back.
  ASSERT_TRUE(Scale("llm", 3).ok());
  EXPECT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return ReadyPods("llm").size() == 3;
  })) << "3 pods did not become Ready again";
}

// A model server that dies is restarted, counted, and Ready again.
TEST_F(ClusterTest, CrashedModelServerIsRestartedAndCounted) {
  ASSERT_TRUE(
      Post(absl::StrCat("/apis/apps/v1/namespaces/", ns_, "/deployments"),
           LoopbackDeployment("crash", 1, "a100-80gb"))
          .ok());
  ASSERT_TRUE(WaitFor(absl::Seconds(60),
                      [&] { return ReadyPods("crash").size() == 1; }));
  const json pod = ReadyPods("crash")[0];
  const std::string id = pod["status"]["containerStatuses"][0]["containerID"];
  int pid = 0;
  ASSERT_TRUE(absl::StartsWith(id, "loopback://") &&
              absl::SimpleAtoi(id.substr(11), &pid))
      << id;
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_TRUE(WaitFor(absl::Seconds(30), [&] {
    std::vector<json> ready = ReadyPods("crash");
    return ready.size() == 1 &&
           ready[0]["status"]["containerStatuses"][0]["restartCount"] == 1;
  })) << "not restarted";
}

// Pods that are not for the loopback kubelet run on kwok's GPU pools: a
// spot Deployment that tolerates the spot taint lands on spot nodes.
TEST_F(ClusterTest, KwokRunsPodsOnTheSpotGpuPool) {
  ASSERT_TRUE(
      Post(absl::StrCat("/apis/apps/v1/namespaces/", ns_, "/deployments"),
           json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "batch"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "batch"}},
      "template": {"metadata": {"labels": {"app": "batch"}},
        "spec": {
          "nodeSelector": {"pilotlight.dev/gpu-class": "a100-80gb",
                           "karpenter.sh/capacity-type": "spot"},
          "tolerations": [{"key": "karpenter.sh/capacity-type",
                           "operator": "Equal", "value": "spot",
                           "effect": "NoSchedule"}],
          "containers": [{"name": "m", "image": "vllm/vllm-openai",
            "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}})"))
          .ok());
  ASSERT_TRUE(WaitFor(absl::Seconds(60),
                      [&] { return ReadyPods("batch").size() == 2; }));
  std::set<std::string> nodes;
  for (const json& p : ReadyPods("batch")) {
    nodes.insert(p["spec"]["nodeName"]);
  }
  // 8 GPUs each: one pod per spot node.
  EXPECT_EQ(nodes, (std::set<std::string>{"gpu-a100-80gb-spot-0",
                                          "gpu-a100-80gb-spot-1"}));
}

}  // namespace
}  // namespace pilotlight::kube
