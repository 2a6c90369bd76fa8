// The shipped Grafana dashboard passes the linter rules of
// tests/deploy/dashboard_checks.h, and those rules catch the defects
// dashboards ship with (KEDA's: a unit that is not a Grafana unit id, a
// hard-coded [5m], a counter without rate(), a panel off the shared
// datasource). Label unit; the live check of every query against a real
// Prometheus is in helm_install_test.cc.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/deploy/dashboard_checks.h"

namespace pilotlight::testutil {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(DashboardTest, ShippedDashboardPassesTheLinter) {
  const json dash = LoadDashboard();
  EXPECT_THAT(LintDashboard(dash), IsEmpty());
  EXPECT_EQ(dash.at("uid"), "pilotlight-endpoint");
  EXPECT_GE(Queries(dash).size(), 20U);
}

TEST(DashboardTest, LinterCatchesTheUsualDefects) {
  json dash = LoadDashboard();
  json& p = dash.at("panels").at(1);  // the first panel after a row
  p["fieldConfig"]["defaults"]["unit"] = "Errors/sec";
  p["targets"][0]["expr"] =
      "sum(rate(pilotlight_decisions_total[5m])) + "
      "sum(pilotlight_activator_requests_total)";
  p["datasource"]["uid"] = "prometheus";
  const std::vector<std::string> bad = LintDashboard(dash);
  ASSERT_EQ(bad.size(), 4U) << ::testing::PrintToString(bad);
  EXPECT_THAT(bad[0], HasSubstr("${datasource}"));
  EXPECT_THAT(bad[1], HasSubstr("\"Errors/sec\" is not a Grafana unit id"));
  EXPECT_THAT(bad[2], HasSubstr("range [5m]"));
  EXPECT_THAT(bad[3],
              HasSubstr("counter pilotlight_activator_requests_total outside"));
}

TEST(DashboardTest, ExpandsVariablesAndFindsMetricNames) {
  const std::string expr =
      "sum(rate(pilotlight_activator_hold_seconds_bucket{endpoint="
      "\"$namespace/$endpoint\"}[$__rate_interval])) / "
      "max(pilotlight_demand_concurrency{namespace=\"$namespace\"})";
  EXPECT_EQ(Expand(expr, "ns", "chat"),
            "sum(rate(pilotlight_activator_hold_seconds_bucket{endpoint="
            "\"ns/chat\"}[1m])) / "
            "max(pilotlight_demand_concurrency{namespace=\"ns\"})");
  EXPECT_THAT(MetricNames(expr),
              ElementsAre("pilotlight_activator_hold_seconds_bucket",
                          "pilotlight_demand_concurrency"));
}

}  // namespace
}  // namespace pilotlight::testutil
