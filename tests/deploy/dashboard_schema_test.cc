// The chart's dashboard decodes strictly into Grafana's published
// dashboard types (the Grafana Foundation SDK, through dashboard-check,
// which tests/cluster/build builds): unknown fields, wrong types and
// missing required fields fail. And the check can fail: a dashboard with
// an unknown field and one with a wrongly typed option are refused. Label
// integration (needs the Go-built tool).
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/test_cluster.h"
#include "tests/deploy/dashboard_checks.h"

namespace pilotlight {
namespace {

using json = nlohmann::json;
using testcluster::Shell;
using ::testing::HasSubstr;

class DashboardSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tool_ = testcluster::BuiltTool("dashboard-check");
    if (tool_.empty()) {
      GTEST_SKIP() << "no dashboard-check: run tests/cluster/build";
    }
  }
  // dashboard-check on `dash` written to a file; its output.
  std::string Check(const json& dash, int* rc) {
    const std::string path = absl::StrCat(
        ::testing::TempDir(), "/dashboard-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name(),
        ".json");
    std::ofstream(path) << dash.dump(2);
    return Shell(absl::StrCat(tool_, " ", path), rc);
  }
  std::string tool_;
};

TEST_F(DashboardSchemaTest, ShippedDashboardDecodesStrictly) {
  int rc = 0;
  const std::string out =
      Shell(absl::StrCat(tool_, " ", testutil::kDashboard), &rc);
  EXPECT_EQ(rc, 0) << out;
  // Every panel, rows included, as the JSON holds them.
  EXPECT_THAT(out, HasSubstr(absl::StrCat(
                       testutil::LoadDashboard()["panels"].size(),
                       " panels decode strictly as dashboard.Dashboard")));
}

TEST_F(DashboardSchemaTest, UnknownFieldsAndWrongTypesAreRefused) {
  json unknown = testutil::LoadDashboard();
  unknown["panels"][1]["colour"] = "red";
  int rc = 0;
  std::string out = Check(unknown, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_THAT(out, HasSubstr("unexpected field 'colour'"));

  json typed = testutil::LoadDashboard();
  typed["panels"][1]["options"]["legend"]["displayMode"] = 5;
  out = Check(typed, &rc);
  EXPECT_NE(rc, 0);
  EXPECT_THAT(out, HasSubstr("panels[1].options.legend.displayMode"));
}

}  // namespace
}  // namespace pilotlight
