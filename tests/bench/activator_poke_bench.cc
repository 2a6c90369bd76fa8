// activator_poke_bench: the first request at zero -> the /scale patch
// accepted by the API server, on the local test cluster with the real
// `pilotlight controller` and `pilotlight activator` binaries. N endpoints
// sit at zero; one request is sent to each in turn through the activator
// (held: no replica), and an informer on the Deployments records when each
// one's spec.replicas first turns positive. Prints the latency p50/p99/max
// (request sent -> watch event, so it includes the watch's delivery), the
// activator's poke -> controller acknowledgement, and each request's whole
// wait (hold + cold start + service).
// Usage: activator_poke_bench [--endpoints 8]
// Needs the cluster (PILOTLIGHT_CLUSTER_DIR).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/kube/informer.h"
#include "controller/kube/kube_client.h"
#include "controller/process/real_clock.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/process.h"
#include "tests/cluster/test_cluster.h"

namespace {

using json = nlohmann::json;
using pilotlight::testcluster::Process;

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

json Deployment(const std::string& name) {
  json d = json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "spec": {"replicas": 0, "template": {
      "metadata": {"annotations": {"pilotlight.dev/cold-start-seconds": "2"}},
      "spec": {
        "nodeSelector": {"pilotlight.dev/loopback": "true",
                         "pilotlight.dev/gpu-class": "l4",
                         "karpenter.sh/capacity-type": "on-demand"},
        "tolerations": [
          {"key": "pilotlight.dev/loopback", "operator": "Exists", "effect": "NoSchedule"},
          {"key": "karpenter.sh/capacity-type", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "vllm", "image": "vllm/vllm-openai",
          "args": ["--model", "llama-3.1-8b", "--gpu", "l4"],
          "ports": [{"containerPort": 8000}],
          "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})");
  d["metadata"]["name"] = name;
  d["spec"]["selector"]["matchLabels"] = {{"app", name}};
  d["spec"]["template"]["metadata"]["labels"] = {{"app", name}};
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  int endpoints = 8;  // the loopback kubelet's l4 pool has room for 8
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--endpoints") {
      endpoints = std::atoi(argv[i + 1]);
    }
  }
  namespace tc = pilotlight::testcluster;
  const std::optional<std::string> kubeconfig = tc::TestKubeconfig();
  const std::string prom = tc::TestPrometheusUrl();
  if (!kubeconfig || prom.empty()) {
    std::fprintf(stderr, "activator_poke_bench: no test cluster\n");
    return 2;
  }
  const auto config = pilotlight::kube::KubeConfigFromFile(*kubeconfig);
  auto client = pilotlight::kube::KubeClient::Create(*config);
  if (!config.ok() || !client.ok()) {
    std::fprintf(stderr, "activator_poke_bench: no API client\n");
    return 2;
  }
  tc::Shell(absl::StrCat(
      "kubectl --kubeconfig ", *kubeconfig,
      " apply --server-side --force-conflicts -f deploy/crds/ && kubectl "
      "--kubeconfig ",
      *kubeconfig,
      " wait --for condition=established --timeout=30s -f deploy/crds/ && "
      "kubectl --kubeconfig ",
      *kubeconfig, " apply --server-side -f deploy/gpuclasses/default.yaml"));
  const std::string ns = absl::StrCat("poke-bench-", ::getpid());
  (void)(*client)->Request("POST", "/api/v1/namespaces",
                           json{{"metadata", {{"name", ns}}}}.dump());
  for (int i = 0; i < endpoints; ++i) {
    const std::string name = absl::StrCat("ep-", i);
    const json ia = {
        {"apiVersion", "pilotlight.dev/v1alpha1"},
        {"kind", "InferenceAutoscaler"},
        {"metadata", {{"name", name}}},
        {"spec",
         {{"model", {{"preset", "llama-3.1-8b"}}},
          {"replicas", {{"min", 0}, {"max", 2}}},
          {"variants", json::array({{{"deployment", name},
                                     {"gpuClass", "l4-on-demand"}}})}}}};
    (void)(*client)->Request(
        "POST", absl::StrCat("/apis/apps/v1/namespaces/", ns, "/deployments"),
        Deployment(name).dump());
    (void)(*client)->Request(
        "POST",
        absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/", ns,
                     "/inferenceautoscalers"),
        ia.dump());
  }
  // The baseline: a Deployment no InferenceAutoscaler manages, whose pods
  // fit no node (they stay Pending), patched straight from here.
  json baseline = Deployment("baseline");
  baseline["spec"]["template"]["spec"]["nodeSelector"] = {
      {"pilotlight.dev/no-such-pool", "true"}};
  (void)(*client)->Request(
      "POST", absl::StrCat("/apis/apps/v1/namespaces/", ns, "/deployments"),
      baseline.dump());
  const std::string logs = tc::TestClusterDir().value_or("/tmp") + "/logs/";
  Process controller(
      PILOTLIGHT_BINARY,
      {"controller", "--kubeconfig", *kubeconfig, "--prometheus", prom,
       "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0",
       "--activator-grace", "0s", "--no-leader-election"},
      logs + ns + "-controller.log");
  const int grpc = controller.LogInt("controller started", "grpc_port");
  const int controller_metrics =
      controller.LogInt("controller started", "metrics_port");
  Process activator(
      PILOTLIGHT_BINARY,
      {"activator", "--kubeconfig", *kubeconfig, "--controller",
       absl::StrCat("127.0.0.1:", grpc), "--listen", "127.0.0.1:0",
       "--admin-listen", "127.0.0.1:0", "--drain-delay", "0s"},
      logs + ns + "-activator.log");
  const int port = activator.LogInt("activator started", "port");
  const int admin = activator.LogInt("activator started", "admin_port");
  if (grpc == 0 || port == 0) {
    std::fprintf(stderr, "activator_poke_bench: did not start; see %s\n",
                 logs.c_str());
    return 1;
  }
  // Every endpoint reconciled (status written) before the first poke.
  const absl::Time t_wait = absl::Now();
  const bool reconciled = tc::WaitFor(absl::Minutes(2), [&] {
    auto list = (*client)->Request(
        "GET",
        absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/", ns,
                     "/inferenceautoscalers"),
        "");
    if (!list.ok()) {
      std::fprintf(stderr, "listing: %s\n", list.status().ToString().c_str());
      return false;
    }
    // A copy: a range over a member of a temporary would dangle.
    const json items = json::parse(list->body)["items"];
    int ready = 0;
    for (const json& ia : items) {
      const json status = ia.value("status", json::object());
      for (const json& c : status.value("conditions", json::array())) {
        ready +=
            c.value("type", "") == "Ready" && c.value("status", "") == "True"
                ? 1
                : 0;
      }
    }
    return ready == endpoints;
  });
  std::printf("%d endpoints at zero, reconciled in %s%s\n", endpoints,
              absl::FormatDuration(absl::Now() - t_wait).c_str(),
              reconciled ? "" : " (not all: timed out)");

  std::mutex mu;
  std::condition_variable baseline_changed;
  std::optional<std::pair<int, absl::Time>> baseline_seen;
  std::map<std::string, absl::Time> patched;
  pilotlight::process::RealClock clock;
  pilotlight::kube::InformerOptions io;
  io.path = absl::StrCat("/apis/apps/v1/namespaces/", ns, "/deployments");
  pilotlight::kube::Informer deployments(*config, io, clock);
  deployments.AddHandler([&](pilotlight::kube::EventType, const json& d) {
    if (d["metadata"].value("name", "") == "baseline") {
      const std::lock_guard<std::mutex> lock(mu);
      baseline_seen.emplace(d["spec"].value("replicas", 0), absl::Now());
      baseline_changed.notify_all();
      return;
    }
    if (d["spec"].value("replicas", 0) > 0) {
      const std::lock_guard<std::mutex> lock(mu);
      patched.emplace(d["metadata"].value("name", ""), absl::Now());
    }
  });
  deployments.Start();
  while (!deployments.Synced()) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  // The same path without Pilotlight: a /scale PATCH sent from here ->
  // the watch event, 0 -> 1 and back, in the same run.
  std::vector<double> direct_ms;
  std::vector<double> direct_rtt_ms;
  for (int i = 0; i < 16; ++i) {
    const int to = (i + 1) % 2;
    const absl::Time t0 = absl::Now();
    auto r = (*client)->Request("PATCH",
                                absl::StrCat("/apis/apps/v1/namespaces/", ns,
                                             "/deployments/baseline/scale"),
                                json{{"spec", {{"replicas", to}}}}.dump(),
                                "application/merge-patch+json");
    const absl::Time t1 = absl::Now();
    std::unique_lock<std::mutex> lock(mu);
    const bool seen = baseline_changed.wait_for(
        lock, std::chrono::seconds(10),
        [&] { return baseline_seen && baseline_seen->first == to; });
    if (!r.ok() || !seen) {
      std::fprintf(stderr, "activator_poke_bench: baseline patch: %s\n",
                   r.ok() ? "no watch event" : r.status().ToString().c_str());
      continue;
    }
    direct_rtt_ms.push_back(absl::ToDoubleMilliseconds(t1 - t0));
    direct_ms.push_back(absl::ToDoubleMilliseconds(baseline_seen->second - t0));
    lock.unlock();
    absl::SleepFor(absl::Milliseconds(100));
  }
  std::map<std::string, absl::Time> sent;
  std::vector<double> waits;
  std::vector<std::thread> requests;
  for (int i = 0; i < endpoints; ++i) {
    const std::string name = absl::StrCat("ep-", i);
    {
      const std::lock_guard<std::mutex> lock(mu);
      sent[name] = absl::Now();
    }
    requests.emplace_back([&, name] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(120);
      const absl::Time t0 = absl::Now();
      httplib::Result r =
          c.Post(absl::StrCat("/", ns, "/", name, "/v1/completions"),
                 R"({"prompt": "hi", "max_tokens": 4})", "application/json");
      const std::lock_guard<std::mutex> lock(mu);
      if (r && r->status == 200) {
        waits.push_back(absl::ToDoubleSeconds(absl::Now() - t0));
      } else {
        std::fprintf(
            stderr, "%s: %s\n", name.c_str(),
            r ? r->body.c_str() : httplib::to_string(r.error()).c_str());
      }
    });
    absl::SleepFor(absl::Milliseconds(300));
  }
  for (std::thread& t : requests) {
    t.join();
  }
  deployments.Stop();
  std::vector<double> ms;
  for (const auto& [name, t] : sent) {
    auto p = patched.find(name);
    if (p != patched.end()) {
      ms.push_back(absl::ToDoubleMilliseconds(p->second - t));
    }
  }
  const double acks =
      Process::Metric(admin, "pilotlight_activator_poke_ack_seconds_count");
  const double ack_sum =
      Process::Metric(admin, "pilotlight_activator_poke_ack_seconds_sum");
  std::printf(
      "first request at zero -> /scale patched (watch event), %zu of %d "
      "endpoints:\n  p50 %.2f ms  p99 %.2f ms  max %.2f ms\n",
      ms.size(), endpoints, Quantile(ms, 0.5), Quantile(ms, 0.99),
      Quantile(ms, 1.0));
  std::printf(
      "  the same /scale PATCH sent straight to the API server -> watch event, "
      "%zu patches:\n  p50 %.2f ms  p99 %.2f ms  max %.2f ms (PATCH round "
      "trip p50 %.2f ms  p99 %.2f ms)\n",
      direct_ms.size(), Quantile(direct_ms, 0.5), Quantile(direct_ms, 0.99),
      Quantile(direct_ms, 1.0), Quantile(direct_rtt_ms, 0.5),
      Quantile(direct_rtt_ms, 0.99));
  std::printf(
      "  added by the activator and controller: p50 %+.2f ms  p99 %+.2f ms\n",
      Quantile(ms, 0.5) - Quantile(direct_ms, 0.5),
      Quantile(ms, 0.99) - Quantile(direct_ms, 0.99));
  std::printf("  poke -> controller ack: mean %.2f ms over %.0f pokes\n",
              acks > 0 ? ack_sum / acks * 1000 : 0.0, acks);
  const double patches = Process::Metric(
      controller_metrics, "pilotlight_poke_to_patch_seconds_count");
  const double patch_sum = Process::Metric(
      controller_metrics, "pilotlight_poke_to_patch_seconds_sum");
  std::printf(
      "  poke received -> patch accepted, in the controller: mean %.2f ms "
      "over %.0f patches\n",
      patches > 0 ? patch_sum / patches * 1000 : 0.0, patches);
  std::printf(
      "  the held requests' whole wait (hold + 2 s cold start + service): "
      "p50 %.2f s  max %.2f s (%zu answered)\n",
      Quantile(waits, 0.5), Quantile(waits, 1.0), waits.size());
  if (auto del = (*client)->Request("DELETE", "/api/v1/namespaces/" + ns, "");
      !del.ok()) {
    std::fprintf(stderr, "activator_poke_bench: deleting %s: %s\n", ns.c_str(),
                 del.status().ToString().c_str());
  }
  return static_cast<int>(ms.size()) == endpoints &&
                 static_cast<int>(waits.size()) == endpoints
             ? 0
             : 1;
}
