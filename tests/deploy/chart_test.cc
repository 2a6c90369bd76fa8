// The Helm chart (charts/pilotlight), with the real helm that
// tests/cluster/build builds: it lints strictly with its default values and
// with every optional part on (ci/everything-values.yaml), its schema
// refuses unknown keys and malformed values, deploy/ is what it renders,
// every pod it makes is locked down, the activator's controller selector
// finds the controller's pods, and the real API server accepts every
// object it renders (server-side dry run; label integration, local test
// cluster for that one).
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/test_cluster.h"
#include "tests/yaml_json.h"

namespace pilotlight {
namespace {

using json = nlohmann::json;
using testcluster::Shell;
using ::testing::HasSubstr;

constexpr char kChart[] = "charts/pilotlight";
constexpr char kEverything[] = "charts/pilotlight/ci/everything-values.yaml";

// The default values, and every optional part on.
std::vector<std::string> ValueSets() {
  return {"", absl::StrCat("-f ", kEverything)};
}

class ChartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    helm_ = testcluster::BuiltTool("helm");
    if (helm_.empty()) {
      GTEST_SKIP() << "no helm: run tests/cluster/build";
    }
  }

  // `helm template` of the chart with `args`; fails the test on an error.
  std::vector<json> Render(const std::string& args) {
    const std::string out =
        Shell(absl::StrCat(helm_, " template pl ", kChart,
                           " --namespace pl-ns ", args, " 2>/dev/null"),
              &rc_);
    EXPECT_EQ(rc_, 0) << out;
    std::vector<json> objects;
    for (const YAML::Node& doc : YAML::LoadAll(out)) {
      if (doc.IsMap()) {
        objects.push_back(testutil::YamlToJson(doc));
      }
    }
    return objects;
  }

  std::string helm_;
  int rc_ = 0;
};

TEST_F(ChartTest, LintsStrictlyWithDefaultsAndWithEverythingOn) {
  for (const std::string& values : ValueSets()) {
    const std::string out = Shell(
        absl::StrCat(helm_, " lint --strict ", kChart, " ", values), &rc_);
    EXPECT_EQ(rc_, 0) << out;
    EXPECT_THAT(out, HasSubstr("0 chart(s) failed"));
  }
}

TEST_F(ChartTest, SchemaRefusesUnknownKeysAndMalformedValues) {
  struct Case {
    std::string set, says;
  };
  for (const Case& c : std::vector<Case>{
           {"controler.replicas=2", "'controler' not allowed"},
           {"activator.maxHeldd=5", "'maxHeldd' not allowed"},
           {"controller.tick=2", "/controller/tick"},
           {"controller.replicas=0", "/controller/replicas"},
           {"activator.service.type=Ingress", "/activator/service/type"},
           {"controller.prometheusUrl=prometheus:9090",
            "/controller/prometheusUrl"}}) {
    const std::string out = Shell(
        absl::StrCat(helm_, " template pl ", kChart, " --set ", c.set), &rc_);
    EXPECT_NE(rc_, 0) << c.set << " was accepted";
    EXPECT_THAT(out, HasSubstr(c.says)) << c.set;
  }
}

TEST_F(ChartTest, DeployIsWhatTheChartRenders) {
  const std::string out = Shell(
      absl::StrCat("HELM=", helm_, " scripts/render-deploy --check"), &rc_);
  EXPECT_EQ(rc_, 0) << out;
}

// Non-root, read-only root filesystem, no capabilities, RuntimeDefault
// seccomp, probes and resources: for every pod, with any values.
TEST_F(ChartTest, EveryPodIsLockedDown) {
  for (const std::string& values : ValueSets()) {
    int deployments = 0;
    for (const json& o : Render(values)) {
      if (o.at("kind") != "Deployment") {
        continue;
      }
      ++deployments;
      const std::string name = o.at("metadata").at("name");
      const json& pod = o.at("spec").at("template").at("spec");
      const json& psc = pod.at("securityContext");
      EXPECT_EQ(psc.at("runAsNonRoot"), true) << name;
      EXPECT_EQ(psc.at("seccompProfile").at("type"), "RuntimeDefault") << name;
      for (const json& c : pod.at("containers")) {
        const json& sc = c.at("securityContext");
        EXPECT_EQ(sc.at("readOnlyRootFilesystem"), true) << name;
        EXPECT_EQ(sc.at("allowPrivilegeEscalation"), false) << name;
        EXPECT_EQ(sc.at("capabilities").at("drop"), json::array({"ALL"}))
            << name;
        EXPECT_TRUE(c.contains("readinessProbe")) << name;
        EXPECT_TRUE(c.contains("livenessProbe")) << name;
        EXPECT_TRUE(c.at("resources").contains("requests")) << name;
        EXPECT_TRUE(c.at("resources").at("limits").contains("memory")) << name;
      }
    }
    EXPECT_EQ(deployments, 2) << values;
  }
}

// hostNetwork is opt-in, and when on both pods take the node's network
// namespace with the cluster's DNS (ClusterFirstWithHostNet: a host-network
// pod otherwise resolves through the node's resolv.conf and cannot find
// the API server's or Prometheus' Service names).
TEST_F(ChartTest, HostNetworkIsOptInAndKeepsClusterDns) {
  for (const bool on : {false, true}) {
    int deployments = 0;
    for (const json& o :
         Render(on ? "--set hostNetwork=true" : "--set hostNetwork=false")) {
      if (o.at("kind") != "Deployment") {
        continue;
      }
      ++deployments;
      const json& pod = o.at("spec").at("template").at("spec");
      const std::string name = o.at("metadata").at("name");
      EXPECT_EQ(pod.value("hostNetwork", false), on) << name;
      EXPECT_EQ(pod.value("dnsPolicy", ""), on ? "ClusterFirstWithHostNet" : "")
          << name;
    }
    EXPECT_EQ(deployments, 2);
  }
}

// The activator reaches the controllers through --controller-selector: it
// must select exactly the controller Deployment's pods, whatever the
// release and name overrides.
TEST_F(ChartTest, ActivatorSelectsTheControllersPods) {
  for (const std::string& values : ValueSets()) {
    json controller_labels, activator_args;
    for (const json& o : Render(values)) {
      if (o.at("kind") != "Deployment") {
        continue;
      }
      const json& tmpl = o.at("spec").at("template");
      if (o.at("metadata").at("labels").at("app.kubernetes.io/component") ==
          "controller") {
        controller_labels = tmpl.at("metadata").at("labels");
      } else {
        activator_args = tmpl.at("spec").at("containers").at(0).at("args");
      }
    }
    std::string selector;
    for (const json& a : activator_args) {
      const std::string s = a.get<std::string>();
      if (s.rfind("--controller-selector=", 0) == 0) {
        selector = s.substr(std::string("--controller-selector=").size());
      }
    }
    ASSERT_FALSE(selector.empty()) << values;
    for (absl::string_view kv : absl::StrSplit(selector, ',')) {
      const std::vector<std::string> p = absl::StrSplit(kv, '=');
      ASSERT_EQ(p.size(), 2U) << selector;
      EXPECT_EQ(controller_labels.value(p[0], ""), p[1]) << selector;
    }
  }
}

// gpuClasses.clouds installs the built-in GPUClasses of those clouds only
// (each labelled pilotlight.dev/cloud by `pilotlight gpuclasses`), as
// post-install hooks.
TEST_F(ChartTest, GpuClassesByCloud) {
  struct Case {
    std::string set;
    std::set<std::string> want;
  };
  for (const Case& c : std::vector<Case>{
           {"--set gpuClasses.clouds={gcp}", {"h200-on-demand", "h200-spot"}},
           {"--set gpuClasses.clouds={azure,lambda}",
            {"mi300x-on-demand", "h100-80gb-pcie-on-demand",
             "h100-80gb-pcie-spot", "b200-on-demand", "b200-spot"}},
           {"--set gpuClasses.install=false", {}}}) {
    std::set<std::string> got;
    for (const json& o : Render(c.set)) {
      if (o.at("kind") != "GPUClass") {
        continue;
      }
      got.insert(o.at("metadata").at("name").get<std::string>());
      EXPECT_EQ(o.at("metadata").at("annotations").at("helm.sh/hook"),
                "post-install,post-upgrade");
    }
    EXPECT_EQ(got, c.want) << c.set;
  }
  int all = 0;
  for (const json& o : Render("")) {
    all += o.at("kind") == "GPUClass" ? 1 : 0;
  }
  EXPECT_EQ(all, 21);  // every catalog entry, spot where it has a price
  const std::string out = Shell(absl::StrCat(helm_, " template pl ", kChart,
                                             " --set gpuClasses.clouds={oci}"),
                                &rc_);
  EXPECT_NE(rc_, 0);
  EXPECT_THAT(out, HasSubstr("/gpuClasses/clouds/0"));
}

// The real API server takes every object the chart renders, CRDs, GPUClass
// hooks, RBAC and workloads alike (server-side dry run: nothing is
// created).
TEST_F(ChartTest, ApiServerAcceptsEveryRenderedObject) {
  const std::optional<std::string> kubeconfig = testcluster::TestKubeconfig();
  if (!kubeconfig) {
    GTEST_SKIP() << testcluster::kNoCluster;
  }
  const std::string kubectl =
      absl::StrCat("kubectl --kubeconfig ", *kubeconfig);
  // The GPUClass kind must exist for its objects to be validated.
  std::string out = Shell(
      absl::StrCat(
          kubectl, " apply --server-side --force-conflicts -f deploy/crds/ && ",
          kubectl,
          " wait --for condition=established --timeout=30s -f deploy/crds/"),
      &rc_);
  ASSERT_EQ(rc_, 0) << out;
  out = Shell(
      absl::StrCat(helm_, " template pl ", kChart, " --namespace default | ",
                   kubectl, " apply --dry-run=server -f -"),
      &rc_);
  EXPECT_EQ(rc_, 0) << out;
  EXPECT_THAT(
      out,
      HasSubstr(
          "deployment.apps/pl-pilotlight-controller created (server dry run)"));
  EXPECT_THAT(out, HasSubstr("gpuclass.pilotlight.dev/l4-on-demand"));
}

}  // namespace
}  // namespace pilotlight
