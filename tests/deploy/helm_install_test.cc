// The chart installed with helm on the local test cluster, its pods run
// from the pilotlight image (scripts/image) by real kubelets on containerd
// and runc (the cluster's runtime nodes, tests/cluster/runtime-nodes.sh:
// the image's libraries and entrypoint, user 65532, a read-only root, a
// bound service-account token, the host network on loopback addresses).
// Where no runtime node holds the image, the loopback kubelet runs the
// pilotlight binary in its place, and the test says so; with
// PILOTLIGHT_REQUIRE_IMAGE=1 (scripts/test) that fails instead.
// Both Deployments become Ready, one controller leads, an endpoint at zero
// is brought back by a request sent to the activator's Service, goes back
// to zero when idle and comes back through the other activator, the
// leader's pod is deleted and the other replica leads within the lease
// duration, `helm upgrade` with changed values rolls the pods, and
// `helm uninstall` removes everything the chart made and keeps the CRDs.
// Label integration; prints install-to-Ready, first-request and failover
// times.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/cluster/pod_facts.h"
#include "httplib.h"
#include "tests/cluster/endpoint_fixture.h"
#include "tests/deploy/dashboard_checks.h"

namespace pilotlight {
namespace {

using json = nlohmann::json;
using testcluster::Shell;
using testcluster::WaitFor;
using ::testing::HasSubstr;

// Not `pilotlight-system`: the other tests apply deploy/rbac.yaml there
// (the namespace is helm-e2e-<pid>: a namespace takes a while to go).
// The release is named pilotlight (so the CRDs carry the same labels as
// deploy/crds, which the other tests apply) and its objects pilotlight-e2e.
constexpr char kFull[] = "pilotlight-e2e";
// Two controllers and two activators, one of each a node (their ports are
// the node's: host network), and a third node for the rolling upgrade's
// surge pod.
constexpr int kRuntimeNodes = 3;

class HelmInstallTest : public testcluster::EndpointFixture {
 protected:
  void SetUp() override {
    EndpointFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    namespace_ = absl::StrCat("helm-e2e-", ::getpid());
    helm_ = absl::StrCat(testcluster::CachedBinary("helm"), " --kubeconfig ",
                         kubeconfig_, " --namespace ", namespace_);
    kubectl_ =
        absl::StrCat("kubectl --kubeconfig ", kubeconfig_, " -n ", namespace_);
    values_ = absl::StrCat(testcluster::TestClusterDir().value_or("/tmp"),
                           "/run/helm-e2e-values.yaml");
    image_ = ImageOnRuntimeNodes();
    const char* require = std::getenv("PILOTLIGHT_REQUIRE_IMAGE");
    if (image_.empty() && require != nullptr && std::string(require) == "1") {
      FAIL() << "PILOTLIGHT_REQUIRE_IMAGE=1, but fewer than " << kRuntimeNodes
             << " Ready runtime nodes hold " << ChartImage()
             << ": build it (scripts/image --archive FILE) and start the "
                "cluster with PILOTLIGHT_IMAGES=FILE "
                "PILOTLIGHT_RUNTIME_NODES=3 (tests/cluster/up)\n"
             << Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_,
                                   " get nodes -o wide"));
    }
    std::ofstream values(values_);
    // Pods listening on their own IP (they share one network namespace),
    // and the cluster's Prometheus.
    values << "fullnameOverride: " << kFull << "\nbindPodIP: true\n";
    std::string placement;
    if (!image_.empty()) {
      // The runtime nodes (tainted for pods that mean them), the image
      // they imported (never pulled: no registry is reached), the host
      // network. There is no kube-proxy: the API server is named by its
      // loopback address instead of the kubernetes Service's ClusterIP.
      const std::string api = testcluster::TestClusterUrl("apiserver.url");
      const size_t colon = api.rfind(':');
      values << "hostNetwork: true\nimage: {pullPolicy: Never}\n";
      placement = absl::StrCat(
          "  nodeSelector: {pilotlight.dev/runtime: containerd}\n"
          "  tolerations: [{key: pilotlight.dev/runtime, operator: Exists, "
          "effect: NoSchedule}]\n"
          "  env: [{name: KUBERNETES_SERVICE_HOST, value: \"127.0.0.1\"}, "
          "{name: KUBERNETES_SERVICE_PORT, value: \"",
          api.substr(colon + 1), "\"}]\n");
      std::cout << "[helm] the chart's pods run from " << image_
                << " on the runtime nodes (containerd, runc)\n";
    } else {
      // The loopback kubelet's nodes (tainted for pods that mean it).
      placement =
          "  nodeSelector: {pilotlight.dev/loopback: \"true\"}\n"
          "  tolerations: [{key: pilotlight.dev/loopback, operator: Exists, "
          "effect: NoSchedule}]\n";
      std::cout << "[helm] no runtime node holds " << ChartImage()
                << ": the loopback kubelet runs the pilotlight binary in the "
                   "image's place\n";
    }
    values << "controller:\n  prometheusUrl: " << prometheus_ << "\n"
           << placement << "activator:\n"
           << placement;
  }
  void TearDown() override {
    if (!helm_.empty()) {
      Shell(absl::StrCat(helm_, " uninstall pilotlight --wait --timeout 60s"));
      Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_,
                         " delete namespace ", namespace_, " --wait=false"));
    }
    EndpointFixture::TearDown();
  }

  // The image the chart names by default, as containerd names it.
  static std::string ChartImage() {
    return absl::StrCat("docker.io/library/pilotlight:", PILOTLIGHT_VERSION);
  }
  // ChartImage() when at least kRuntimeNodes Ready runtime nodes hold it,
  // else "".
  std::string ImageOnRuntimeNodes() {
    const json nodes = json::parse(
        Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_,
                           " get nodes -l pilotlight.dev/runtime=containerd "
                           "-o json 2>/dev/null")),
        nullptr, false);
    if (!nodes.is_object()) {
      return "";
    }
    int holding = 0;
    for (const json& n : nodes.value("items", json::array())) {
      const bool ready = cluster::ConditionTime(n, "Ready").has_value();
      bool has = false;
      for (const json& i : n["status"].value("images", json::array())) {
        for (const json& name : i.value("names", json::array())) {
          has |= name == ChartImage();
        }
      }
      holding += ready && has ? 1 : 0;
    }
    return holding >= kRuntimeNodes ? ChartImage() : "";
  }

  // Every pod of the chart runs the image in a container: containerd's
  // container IDs, the image's ID, and four pilotlight processes whose
  // root is a container's overlay, mounted read-only, as user 65532.
  void ExpectRunFromTheImage() {
    const json pods = GetJson("pods");
    ASSERT_TRUE(pods.is_object());
    int containers = 0;
    for (const json& p : pods["items"]) {
      for (const json& c :
           p["status"].value("containerStatuses", json::array())) {
        ++containers;
        EXPECT_TRUE(
            absl::StartsWith(c.value("containerID", ""), "containerd://"))
            << c.dump();
        EXPECT_EQ(c.value("image", ""), image_) << c.dump();
        EXPECT_TRUE(absl::StartsWith(c.value("imageID", ""), "sha256:"))
            << c.dump();
      }
    }
    EXPECT_EQ(containers, 4);
    const std::vector<std::string> pids =
        absl::StrSplit(Shell("pgrep -x pilotlight"), '\n', absl::SkipEmpty());
    const std::string runtime_dir =
        absl::StrCat(testcluster::TestClusterDir().value_or("?"), "/runtime/");
    int processes = 0;
    for (const std::string& pid : pids) {
      // The root mount as the process sees it (mount point "/", field 5 of
      // its mountinfo): an overlay of this cluster's runtime nodes'
      // snapshots, read-only -- not the host's root, which another test's
      // pilotlight process has.
      const std::string root = Shell(absl::StrCat(
          "awk '$5 == \"/\"' /proc/", pid, "/mountinfo 2>/dev/null"));
      if (!absl::StrContains(root, " - overlay ") ||
          !absl::StrContains(root, runtime_dir)) {
        continue;
      }
      ++processes;
      const std::vector<std::string> fields = absl::StrSplit(root, ' ');
      ASSERT_GT(fields.size(), 5U) << root;
      EXPECT_TRUE(absl::StartsWith(fields[5], "ro,")) << pid << ": " << root;
      EXPECT_THAT(Shell(absl::StrCat("ps -o user= -p ", pid)),
                  HasSubstr("65532"));
    }
    EXPECT_EQ(processes, 4) << Shell("ps -o pid=,user=,args= -C pilotlight");
  }

  std::string Get(const std::string& what) {
    return Shell(absl::StrCat(kubectl_, " get ", what));
  }
  json GetJson(const std::string& what) {
    return json::parse(
        Shell(absl::StrCat(kubectl_, " get ", what, " -o json 2>/dev/null")),
        nullptr, false);
  }
  std::string LeaseHolder() {
    const json lease = GetJson(absl::StrCat("lease ", kFull, "-controller"));
    return lease.is_object()
               ? lease.value("spec", json::object()).value("holderIdentity", "")
               : "";
  }
  // Ready pods of one component: name -> pod IP.
  std::map<std::string, std::string> ReadyPods(const std::string& component) {
    std::map<std::string, std::string> out;
    const json pods = GetJson(
        absl::StrCat("pods -l app.kubernetes.io/component=", component));
    if (!pods.is_object()) {
      return out;
    }
    for (const json& p : pods["items"]) {
      if (cluster::PodTerminating(p)) {
        continue;
      }
      if (cluster::PodReady(p)) {
        out[p["metadata"].value("name", "")] = p["status"].value("podIP", "");
      }
    }
    return out;
  }
  // The activator Service's ready endpoints, "ip:port", computed as its
  // EndpointSlice controller does -- its selector's Ready pods, its named
  // targetPort resolved in each -- because the API server refuses
  // EndpointSlices with loopback addresses ("may not be in the loopback
  // range"), which is all the loopback kubelet's pods have; and there is
  // no kube-proxy to send to a ClusterIP.
  std::vector<std::string> ServiceEndpoints() {
    std::vector<std::string> out;
    const json svc = GetJson(absl::StrCat("service ", kFull, "-activator"));
    if (!svc.is_object()) {
      return out;
    }
    std::string selector;
    for (const auto& [k, v] : svc["spec"]["selector"].items()) {
      absl::StrAppend(&selector, selector.empty() ? "" : ",", k, "=",
                      v.get<std::string>());
    }
    const json target = svc["spec"]["ports"][0]["targetPort"];
    const json pods = GetJson(absl::StrCat("pods -l ", selector));
    for (const json& p : pods.value("items", json::array())) {
      if (!cluster::PodReady(p) || cluster::PodTerminating(p)) {
        continue;
      }
      for (const json& port : p["spec"]["containers"][0]["ports"]) {
        if (port.value("name", "") == target.get<std::string>()) {
          out.push_back(absl::StrCat(p["status"].value("podIP", ""), ":",
                                     port.value("containerPort", 0)));
        }
      }
    }
    return out;
  }

  // A Prometheus HTTP API answer's `data` (null on an error).
  json Prom(const std::string& path, const httplib::Params& params) {
    httplib::Client c(prometheus_);
    c.set_read_timeout(10);
    httplib::Result r = c.Get(path, params, httplib::Headers{});
    if (!r || r->status != 200) {
      return nullptr;
    }
    const json j = json::parse(r->body, nullptr, false);
    return j.is_object() && j.value("status", "") == "success" ? j["data"]
                                                               : json();
  }

  // The dashboard against the cluster's Prometheus, which scrapes the
  // chart's pods: every target's query, variables expanded for this
  // endpoint, returns series; the variables' label_values find it; every
  // metric named exists. Prints what each panel returned.
  void CheckDashboard(const std::string& endpoint) {
    const json dash = testutil::LoadDashboard();
    const json namespaces = Prom("/api/v1/label/namespace/values",
                                 {{"match[]", "pilotlight_desired_replicas"}});
    EXPECT_TRUE(absl::StrContains(namespaces.dump(), "\"" + ns_ + "\""))
        << "$namespace: " << namespaces.dump();
    const json endpoints = Prom(
        "/api/v1/label/name/values",
        {{"match[]", absl::StrCat("pilotlight_desired_replicas{namespace=\"",
                                  ns_, "\"}")}});
    EXPECT_TRUE(absl::StrContains(endpoints.dump(), "\"" + endpoint + "\""))
        << "$endpoint: " << endpoints.dump();
    // Once the request just answered has been scraped (1 s scrapes).
    EXPECT_TRUE(WaitFor(absl::Seconds(30), [&] {
      const json data = Prom(
          "/api/v1/query",
          {{"query", absl::StrCat("sum(pilotlight_activator_requests_total{"
                                  "endpoint=\"",
                                  ns_, "/", endpoint, "\"})")}});
      return data.is_object() && !data["result"].empty() &&
             data["result"][0]["value"][1] == "1";
    })) << "the request never reached Prometheus";
    int checked = 0;
    for (const testutil::DashboardQuery& q : testutil::Queries(dash)) {
      const std::string expr = testutil::Expand(q.expr, ns_, endpoint);
      json result;
      // Series appear within a few 1 s scrapes; rate() needs two.
      const bool found = WaitFor(absl::Seconds(30), [&] {
        const json data = Prom("/api/v1/query", {{"query", expr}});
        result = data.is_object() ? data.value("result", json::array())
                                  : json::array();
        return !result.empty();
      });
      EXPECT_TRUE(found) << q.panel << " " << q.ref << ": " << expr;
      std::string values;
      for (const json& series : result) {
        absl::StrAppend(&values, values.empty() ? "" : ", ",
                        series["value"][1].get<std::string>());
      }
      std::cout << "[dashboard] " << q.panel << " / " << q.ref << ": "
                << result.size() << " series (" << values << ")\n";
      ++checked;
    }
    // Every metric a panel names exists (a renamed metric would leave its
    // panel empty without any error).
    const json names = Prom("/api/v1/label/__name__/values", {});
    ASSERT_TRUE(names.is_array());
    for (const testutil::DashboardQuery& q : testutil::Queries(dash)) {
      for (const std::string& m : testutil::MetricNames(q.expr)) {
        EXPECT_TRUE(absl::StrContains(names.dump(), "\"" + m + "\""))
            << q.panel << ": no metric " << m << " in Prometheus";
      }
    }
    std::cout << "[dashboard] " << checked
              << " queries run against Prometheus\n";
  }

  std::string namespace_, helm_, kubectl_, values_;
  std::string image_;  // the image the pods run ("": the loopback kubelet)
};

TEST_F(HelmInstallTest, InstallServeFailOverUpgradeUninstall) {
  // --- install -----------------------------------------------------------
  const absl::Time t0 = absl::Now();
  int rc = 0;
  std::string out = Shell(
      absl::StrCat(helm_, " install pilotlight charts/pilotlight ",
                   "--create-namespace --take-ownership --wait --timeout 120s ",
                   "-f ", values_),
      &rc);
  ASSERT_EQ(rc, 0) << out;
  const absl::Duration install = absl::Now() - t0;
  const std::map<std::string, std::string> controllers =
      ReadyPods("controller");
  ASSERT_EQ(controllers.size(), 2U) << Get("pods -o wide");
  ASSERT_EQ(ReadyPods("activator").size(), 2U) << Get("pods -o wide");
  std::cout << "[helm] install -> both Deployments Ready: "
            << absl::FormatDuration(install) << "\n";
  // Run as the chart says: user 65532, its own service account.
  out = Shell(absl::StrCat("ps -o user= -C pilotlight"));
  EXPECT_THAT(out, HasSubstr("65532")) << out;
  if (!image_.empty()) {
    ExpectRunFromTheImage();
  }
  ASSERT_TRUE(WaitFor(absl::Seconds(30),
                      [&] { return controllers.count(LeaseHolder()) == 1; }))
      << "no controller leads: " << LeaseHolder();

  // --- an endpoint at zero, brought back through the activator Service --
  ASSERT_TRUE(CreateDeployment("chat-l4", 0, "l4", "on-demand").ok());
  ASSERT_TRUE(CreateAutoscaler("chat", OneVariantSpec("chat-l4", 0)).ok());
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return Condition(Autoscaler("chat"), "Ready") == "True";
  })) << Autoscaler("chat").dump(2);
  ASSERT_EQ(Replicas("chat-l4"), 0);
  std::vector<std::string> endpoints;
  ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
    endpoints = ServiceEndpoints();
    return endpoints.size() == 2;
  })) << Get("pods -o wide");
  const size_t colon = endpoints[0].find(':');
  httplib::Client client(endpoints[0].substr(0, colon),
                         std::stoi(endpoints[0].substr(colon + 1)));
  client.set_read_timeout(120);
  const absl::Time t1 = absl::Now();
  httplib::Result r = client.Post(
      absl::StrCat("/", ns_, "/chat/v1/completions"),
      R"({"model": "llama-3.1-8b", "prompt": "Say hello", "max_tokens": 8})",
      "application/json");
  const absl::Duration first = absl::Now() - t1;
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(r->body, HasSubstr("\"choices\""));
  EXPECT_GE(Replicas("chat-l4"), 1);
  EXPECT_GE(first, absl::Seconds(2));  // it waited for the 2 s cold start
  std::cout << "[helm] request at zero through the activator Service: "
            << absl::FormatDuration(first) << " (2 s cold start)\n";

  // --- the Grafana dashboard's queries, on what Prometheus scraped -------
  CheckDashboard("chat");

  // --- pilotlight explain, from the live status --------------------------
  out = Shell(absl::StrCat("build/controller/cmd/pilotlight explain ", ns_,
                           "/chat --kubeconfig ", kubeconfig_),
              &rc);
  EXPECT_EQ(rc, 0) << out;
  std::cout << "[explain]\n" << out;
  EXPECT_THAT(out, HasSubstr("break-even T* = B / r"));
  EXPECT_THAT(out, HasSubstr("* l4-on-demand"));
  const json facts = json::parse(
      Shell(absl::StrCat("build/controller/cmd/pilotlight explain ", ns_,
                         "/chat --json --kubeconfig ", kubeconfig_)),
      nullptr, false);
  ASSERT_TRUE(facts.is_object());
  EXPECT_GT(facts["economics"].value("breakEvenSeconds", 0.0), 0);
  EXPECT_EQ(facts["economics"]["tiers"].size(), 1U);

  // --- idle back to zero, then back again through the other activator ---
  // The keep-alive is the break-even (about 70 s here: nothing shorter
  // was asked for), then the last replica goes.
  const absl::Time idle = absl::Now();
  // At zero: the last pod drained and gone (a draining pod still answers
  // a request the activator sent before it saw it terminate).
  ASSERT_TRUE(WaitFor(absl::Seconds(180), [&] {
    return Replicas("chat-l4") == 0 && PodsOf("chat-l4") == 0;
  })) << Autoscaler("chat").dump(2);
  std::cout << "[helm] idle -> zero after "
            << absl::FormatDuration(absl::Now() - idle) << "\n";
  const size_t colon2 = endpoints[1].find(':');
  httplib::Client other(endpoints[1].substr(0, colon2),
                        std::stoi(endpoints[1].substr(colon2 + 1)));
  other.set_read_timeout(120);
  const absl::Time t3 = absl::Now();
  r = other.Post(
      absl::StrCat("/", ns_, "/chat/v1/completions"),
      R"({"model": "llama-3.1-8b", "prompt": "Again", "max_tokens": 8})",
      "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_GE(Replicas("chat-l4"), 1);
  std::cout << "[helm] zero -> served through the other activator: "
            << absl::FormatDuration(absl::Now() - t3) << "\n";

  // --- leader failover ---------------------------------------------------
  const std::string leader = LeaseHolder();
  const absl::Time t2 = absl::Now();
  out = Shell(absl::StrCat(kubectl_, " delete pod ", leader, " --wait=false"),
              &rc);
  ASSERT_EQ(rc, 0) << out;
  std::string next;
  ASSERT_TRUE(WaitFor(absl::Seconds(30),
                      [&] {
                        next = LeaseHolder();
                        return !next.empty() && next != leader;
                      }))
      << "still " << next;
  const absl::Duration failover = absl::Now() - t2;
  EXPECT_LT(failover, absl::Seconds(15));  // the lease duration
  std::cout << "[helm] leader pod deleted -> " << next << " leads after "
            << absl::FormatDuration(failover) << "\n";

  // --- upgrade with changed values rolls the pods ------------------------
  out = Shell(absl::StrCat(helm_, " upgrade pilotlight charts/pilotlight ",
                           "--wait --timeout 120s -f ", values_,
                           " --set controller.tick=3s"),
              &rc);
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    const json pods = GetJson("pods -l app.kubernetes.io/component=controller");
    int rolled = 0, old = 0;
    for (const json& p : pods.value("items", json::array())) {
      const std::string args = p["spec"]["containers"][0]["args"].dump();
      (absl::StrContains(args, "--tick=3s") ? rolled : old) += 1;
    }
    return rolled == 2 && old == 0 && ReadyPods("controller").size() == 2;
  })) << Get("pods -o wide");

  // --- uninstall: nothing the chart made is left, the CRDs are -----------
  out = Shell(absl::StrCat(helm_, " uninstall pilotlight --wait --timeout 90s"),
              &rc);
  ASSERT_EQ(rc, 0) << out;
  // The pods go with their ReplicaSets (the activators after draining).
  EXPECT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return absl::StrContains(Get("pods --no-headers"), "No resources found");
  })) << Get("pods");
  EXPECT_THAT(Shell(absl::StrCat(
                  kubectl_,
                  " get deploy,rs,pods,svc,sa,role,rolebinding,pdb "
                  "-l app.kubernetes.io/part-of=pilotlight --no-headers")),
              HasSubstr("No resources found"));
  EXPECT_EQ(Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_,
                               " get clusterrole,clusterrolebinding "
                               "--no-headers | grep -c ",
                               kFull)),
            "0\n");
  EXPECT_THAT(
      Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_,
                         " get crd inferenceautoscalers.pilotlight.dev")),
      HasSubstr("inferenceautoscalers.pilotlight.dev"));
  helm_.clear();  // uninstalled
  Shell(absl::StrCat("kubectl --kubeconfig ", kubeconfig_, " delete namespace ",
                     namespace_, " --wait=false"));
}

}  // namespace
}  // namespace pilotlight
