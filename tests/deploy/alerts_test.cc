// The alerting rules (charts/pilotlight/rules/pilotlight-alerts.yaml),
// with the promtool of the Prometheus release the test cluster runs
// (tests/cluster/build): `promtool check rules` accepts them, `promtool
// test rules` (tests/deploy/testdata/alerts_test.yaml) has each alert fire
// on its failure after its `for` and stay quiet on the healthy case, every
// alert has a runbook section in docs/install.md, and the chart's
// PrometheusRule carries exactly these groups. Label integration (needs
// the Go-built tools).
#include <yaml-cpp/yaml.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/test_cluster.h"
#include "tests/files.h"
#include "tests/yaml_json.h"

namespace pilotlight {
namespace {

using json = nlohmann::json;
using testcluster::Shell;
using ::testing::HasSubstr;

constexpr char kRules[] = "charts/pilotlight/rules/pilotlight-alerts.yaml";

json Rules() { return testutil::YamlToJson(YAML::LoadFile(kRules)); }

TEST(AlertsTest, PromtoolChecksAndUnitTestsTheRules) {
  const std::string promtool = testcluster::BuiltTool("promtool");
  if (promtool.empty()) {
    GTEST_SKIP() << "no promtool: run tests/cluster/build";
  }
  int rc = 0;
  std::string out = Shell(absl::StrCat(promtool, " check rules ", kRules), &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("SUCCESS: 7 rules found"));
  out =
      Shell(absl::StrCat(promtool,
                         " test rules tests/deploy/testdata/alerts_test.yaml"),
            &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("SUCCESS"));
}

// Every alert is tested, has a severity and a runbook section.
TEST(AlertsTest, EveryAlertIsTestedAndHasARunbook) {
  const std::string tests =
      testutil::ReadFile("tests/deploy/testdata/alerts_test.yaml");
  const std::string docs = testutil::ReadFile("docs/install.md");
  int alerts = 0;
  const json rules = Rules();
  for (const json& group : rules.at("groups")) {
    for (const json& rule : group.at("rules")) {
      const std::string name = rule.at("alert");
      ++alerts;
      EXPECT_THAT(tests, HasSubstr("alertname: " + name))
          << name << " has no promtool test";
      EXPECT_TRUE(rule.at("labels").contains("severity")) << name;
      const std::string anchor = absl::AsciiStrToLower(name);
      EXPECT_EQ(rule.at("annotations").value("runbook_url", ""),
                "https://github.com/pilotlight/pilotlight/blob/main/docs/"
                "install.md#" +
                    anchor);
      EXPECT_THAT(docs, HasSubstr("### " + name))
          << name << ": no runbook section in docs/install.md";
    }
  }
  EXPECT_EQ(alerts, 7);
}

TEST(AlertsTest, ChartPrometheusRuleIsTheRuleFile) {
  const std::string helm = testcluster::BuiltTool("helm");
  if (helm.empty()) {
    GTEST_SKIP() << "no helm: run tests/cluster/build";
  }
  int rc = 0;
  const std::string out =
      Shell(absl::StrCat(helm,
                         " template pl charts/pilotlight --set "
                         "prometheusRule.enabled=true --show-only "
                         "templates/prometheusrule.yaml"),
            &rc);
  ASSERT_EQ(rc, 0) << out;
  const json rule = testutil::YamlToJson(YAML::Load(out));
  EXPECT_EQ(rule.at("kind"), "PrometheusRule");
  EXPECT_EQ(rule.at("spec"), Rules());
}

}  // namespace
}  // namespace pilotlight
