// controller_bench: `pilotlight controller` carrying many endpoints on the
// local test cluster. Creates N Deployments (one in ten with a pod on
// kwok's nodes, the rest at zero) and N InferenceAutoscalers, starts the
// controller binary, waits until every endpoint has a status, then
// measures the steady state for a while and prints:
//   CPU per tick (the whole process, and the reconciles alone), resident
//   memory, API requests per second, Prometheus queries per tick.
// Usage: controller_bench [--endpoints N] [--measure SECONDS] [--workers N]
// Needs the cluster (PILOTLIGHT_CLUSTER_DIR or PILOTLIGHT_TEST_KUBECONFIG).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/kube/kube_client.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/bench/proc_stats.h"
#include "tests/cluster/process.h"
#include "tests/cluster/test_cluster.h"

namespace {

using json = nlohmann::json;
using pilotlight::kube::KubeClient;

using pilotlight::bench::ProcessCpu;
using pilotlight::bench::RssMiB;

double Metric(int port, const std::string& name) {
  return pilotlight::testcluster::Process::Metric(port, name);
}

}  // namespace

int main(int argc, char** argv) {
  int endpoints = 2000;
  int measure_s = 30;
  std::string workers = "2";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--endpoints") {
      endpoints = std::atoi(argv[i + 1]);
    } else if (flag == "--measure") {
      measure_s = std::atoi(argv[i + 1]);
    } else if (flag == "--workers") {
      workers = argv[i + 1];
    }
  }
  const std::optional<std::string> kubeconfig =
      pilotlight::testcluster::TestKubeconfig();
  const std::string prom = pilotlight::testcluster::TestPrometheusUrl();
  if (!kubeconfig || prom.empty()) {
    std::cerr << "controller_bench: no test cluster (PILOTLIGHT_CLUSTER_DIR)\n";
    return 2;
  }
  const auto config = pilotlight::kube::KubeConfigFromFile(*kubeconfig);
  if (!config.ok()) {
    std::cerr << config.status() << "\n";
    return 2;
  }
  const std::string apply = absl::StrCat(
      "kubectl --kubeconfig ", *kubeconfig,
      " apply --server-side --force-conflicts -f deploy/crds/ >/dev/null && "
      "kubectl "
      "--kubeconfig ",
      *kubeconfig,
      " wait --for condition=established -f deploy/crds/ >/dev/null && "
      "kubectl --kubeconfig ",
      *kubeconfig,
      " apply --server-side -f deploy/gpuclasses/default.yaml >/dev/null");
  if (std::system(apply.c_str()) != 0) {
    std::cerr << "controller_bench: applying the CRDs failed\n";
    return 1;
  }
  auto client = *KubeClient::Create(*config);
  const std::string ns = absl::StrCat("bench-", ::getpid());
  (void)client->Request("POST", "/api/v1/namespaces",
                        json{{"metadata", {{"name", ns}}}}.dump());

  // --- Objects, created from 4 threads.
  const absl::Time t_create = absl::Now();
  std::atomic<int> next{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> creators;
  for (int t = 0; t < 4; ++t) {
    creators.emplace_back([&] {
      auto c = *KubeClient::Create(*config);
      for (int i = next++; i < endpoints; i = next++) {
        const std::string name = absl::StrCat("ep-", i);
        json d = json::parse(R"({
          "apiVersion": "apps/v1", "kind": "Deployment",
          "spec": {"template": {"spec": {
            "nodeSelector": {"type": "kwok"},
            "tolerations": [{"key": "karpenter.sh/capacity-type",
                             "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "m", "image": "vllm/vllm-openai"}]}}}})");
        d["metadata"]["name"] = name;
        d["spec"]["replicas"] = i % 10 == 0 ? 1 : 0;
        d["spec"]["selector"]["matchLabels"] = {{"app", name}};
        d["spec"]["template"]["metadata"]["labels"] = {{"app", name}};
        const json ia = {
            {"apiVersion", "pilotlight.dev/v1alpha1"},
            {"kind", "InferenceAutoscaler"},
            {"metadata", {{"name", name}}},
            {"spec",
             {{"model", {{"preset", "llama-3.1-8b"}}},
              {"variants", json::array({{{"deployment", name},
                                         {"gpuClass", "l4-on-demand"}}})}}}};
        if (!c->Request(
                  "POST",
                  absl::StrCat("/apis/apps/v1/namespaces/", ns, "/deployments"),
                  d.dump())
                 .ok() ||
            !c->Request("POST",
                        absl::StrCat("/apis/pilotlight.dev/v1alpha1/"
                                     "namespaces/",
                                     ns, "/inferenceautoscalers"),
                        ia.dump())
                 .ok()) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& t : creators) {
    t.join();
  }
  std::cout << "controller_bench: created " << endpoints
            << " Deployments + InferenceAutoscalers in "
            << absl::FormatDuration(absl::Now() - t_create) << " (" << failed
            << " failed)" << std::endl;

  // --- The controller.
  const std::string log =
      absl::StrCat(pilotlight::testcluster::TestClusterDir().value_or("/tmp"),
                   "/logs/", ns, "-controller.log");
  pilotlight::testcluster::Process controller(
      PILOTLIGHT_BINARY,
      {"controller", "--kubeconfig", *kubeconfig, "--prometheus", prom,
       "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0",
       "--activator-grace", "0s", "--no-leader-election", "--qps", "200",
       "--burst", "400", "--workers", workers},
      log);
  const pid_t pid = controller.pid();
  const int port = controller.LogInt("controller started", "metrics_port");
  const absl::Time t_start = absl::Now();
  int with_status = 0;
  while (with_status < endpoints && absl::Now() - t_start < absl::Minutes(10)) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    auto list = client->Request(
        "GET",
        absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/", ns,
                     "/inferenceautoscalers"),
        "");
    if (!list.ok()) {
      continue;
    }
    const json items = json::parse(list->body)["items"];
    with_status = 0;
    for (const json& ia : items) {
      with_status += ia.contains("status") ? 1 : 0;
    }
  }
  std::cout << "controller_bench: every endpoint reconciled with a status in "
            << absl::FormatDuration(absl::Now() - t_start) << " ("
            << with_status << "/" << endpoints << ")" << std::endl;

  // --- Steady state.
  const double tick_s = 2.0;
  const double cpu0 = ProcessCpu(pid);
  const double req0 = Metric(port, "pilotlight_api_requests");
  const double q0 = Metric(port, "pilotlight_prometheus_queries_total");
  const absl::Time m0 = absl::Now();
  double worker_cpu_max = 0;
  double worker_cpu_sum = 0;
  int samples = 0;
  double rss_max = 0;
  while (absl::Now() - m0 < absl::Seconds(measure_s)) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double w = Metric(port, "pilotlight_tick_cpu_seconds");
    worker_cpu_max = std::max(worker_cpu_max, w);
    worker_cpu_sum += w;
    ++samples;
    rss_max = std::max(rss_max, RssMiB(pid));
  }
  const double secs = absl::ToDoubleSeconds(absl::Now() - m0);
  const double cpu = ProcessCpu(pid) - cpu0;
  const double reqs = Metric(port, "pilotlight_api_requests") - req0;
  const double queries =
      Metric(port, "pilotlight_prometheus_queries_total") - q0;
  const double ticks = secs / tick_s;
  std::printf(
      "controller_bench: %d endpoints, %.0f s steady state (%.1f ticks of %.0f "
      "s)\n"
      "  CPU per tick, whole process      %7.1f ms  (target < 100 ms)\n"
      "  CPU per tick, reconciles alone   %7.1f ms mean, %.1f ms max\n"
      "  resident memory                  %7.1f MiB (target < 200 MB)\n"
      "  API requests per second          %7.1f\n"
      "  Prometheus queries per tick      %7.1f\n",
      endpoints, secs, ticks, tick_s, 1000 * cpu / ticks,
      samples > 0 ? 1000 * worker_cpu_sum / samples : 0.0,
      1000 * worker_cpu_max, rss_max, reqs / secs, queries / ticks);

  controller.Kill(SIGTERM);
  (void)client->Request("DELETE", "/api/v1/namespaces/" + ns, "");
  return with_status == endpoints && failed == 0 ? 0 : 1;
}
