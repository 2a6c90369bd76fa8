// KubeClient against a real kube-apiserver: the local test cluster
// (tests/cluster/up, started by ctest's cluster_up fixture, or by hand with
// PILOTLIGHT_TEST_KUBECONFIG set); without one the test is reported as
// skipped, not passed.
#include "controller/kube/kube_client.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/test_cluster.h"

namespace pilotlight::kube {
namespace {

using ::testing::HasSubstr;

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::optional<std::string> path = testcluster::TestKubeconfig();
    if (!path) {
      GTEST_SKIP() << "no test cluster: run through ctest (the cluster_up "
                      "fixture) or set PILOTLIGHT_TEST_KUBECONFIG";
    }
    absl::StatusOr<KubeConfig> c = KubeConfigFromFile(*path);
    ASSERT_TRUE(c.ok()) << c.status();
    config_ = *c;
    client_ = *KubeClient::Create(config_);
    // One namespace per test: a deleted one lingers while it terminates.
    ns_ = absl::AsciiStrToLower(absl::StrCat(
        "kct-", ::getpid(), "-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ASSERT_TRUE(
        client_
            ->Request("POST", "/api/v1/namespaces",
                      absl::StrCat(R"({"metadata":{"name":")", ns_, R"("}})"))
            .ok());
  }
  void TearDown() override {
    if (client_) {
      (void)client_->Request("DELETE", "/api/v1/namespaces/" + ns_, "");
    }
  }

  KubeConfig config_;
  std::unique_ptr<KubeClient> client_;
  std::string ns_;
};

// Create, conflict, merge-patch, read back, not found; the watch sees the
// change from the created object's resourceVersion.
TEST_F(KubeClientTest, CrudAndWatch) {
  const std::string base = "/api/v1/namespaces/" + ns_ + "/configmaps";
  auto created = client_->Request(
      "POST", base, R"({"metadata":{"name":"cm"},"data":{"replicas":"1"}})");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->status, 201);
  const std::string rv =
      nlohmann::json::parse(created->body)["metadata"]["resourceVersion"];
  auto again = client_->Request("POST", base, R"({"metadata":{"name":"cm"}})");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(again.status().message()),
              HasSubstr("already exists"));

  std::string seen;
  std::thread watcher([&] {
    auto w = KubeClient::Create(config_);
    ASSERT_TRUE(w.ok());
    const absl::Status st = (*w)->Watch(
        base + "?watch=true&resourceVersion=" + rv, [&](WatchEvent e) {
          seen = e.type + ":" + e.object["data"].value("replicas", "");
          return false;  // one event is enough
        });
    EXPECT_TRUE(st.ok()) << st;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto patched =
      client_->Request("PATCH", base + "/cm", R"({"data":{"replicas":"3"}})",
                       "application/merge-patch+json");
  ASSERT_TRUE(patched.ok()) << patched.status();
  watcher.join();
  EXPECT_EQ(seen, "MODIFIED:3");

  auto got = client_->Request("GET", base + "/cm", "");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(nlohmann::json::parse(got->body)["data"]["replicas"], "3");
  EXPECT_EQ(client_->Request("GET", base + "/nope", "").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace pilotlight::kube
