// PromClient against the real Prometheus of the local test cluster (label
// integration; ctest's cluster fixture starts it).
#include "controller/prom/prom_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/test_cluster.h"

namespace pilotlight::prom {
namespace {

using ::testing::HasSubstr;

// The real Prometheus of the local test cluster.
TEST(PromClientClusterTest, RealPrometheusAnswersAndRefusesBadPromQL) {
  const std::string url = testcluster::TestPrometheusUrl();
  if (url.empty()) {
    GTEST_SKIP() << "no test cluster (run through ctest's cluster fixture)";
  }
  auto c = PromClient::Create(url);
  ASSERT_TRUE(c.ok());
  absl::StatusOr<std::vector<Sample>> v = (*c)->Query("vector(42)");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), 1U);
  EXPECT_DOUBLE_EQ((*v)[0].value, 42);
  absl::StatusOr<std::vector<Series>> m =
      (*c)->QueryRange("vector(1)", absl::Now() - absl::Seconds(10),
                       absl::Now(), absl::Seconds(2));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 1U);
  EXPECT_GE((*m)[0].points.size(), 5U);
  absl::StatusOr<std::vector<Sample>> bad = (*c)->Query("sum by (");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("bad_data"));
}

}  // namespace
}  // namespace pilotlight::prom
