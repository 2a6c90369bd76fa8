// KubeClient against a real kube-apiserver: the local test cluster
// (tests/cluster/up, started by ctest's cluster_up fixture, or by hand with
// PILOTLIGHT_TEST_KUBECONFIG set); without one the test is reported as
// skipped, not passed.
#include "controller/kube/kube_client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "controller/kube/informer.h"
#include "controller/kube/leader_election.h"
#include "controller/kube/update.h"
#include "controller/process/real_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/cluster/test_cluster.h"

namespace pilotlight::kube {
namespace {

using ::testing::HasSubstr;

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::optional<std::string> path = testcluster::TestKubeconfig();
    if (!path) {
      GTEST_SKIP() << testcluster::kNoCluster;
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
        // Only "cm": kube-root-ca.crt is published into every new
        // namespace and may arrive after cm.
        base + "?watch=true&fieldSelector=metadata.name%3Dcm&resourceVersion=" +
            rv,
        [&](WatchEvent e) {
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

// The informer: list, watch, and after a gap (a dropped watch, a restarted
// controller) a relist that reports what was deleted meanwhile.
TEST_F(KubeClientTest, InformerListsWatchesAndRelistsDeletions) {
  const std::string base = "/api/v1/namespaces/" + ns_ + "/configmaps";
  // Labelled, so kube-root-ca.crt (every namespace has it) stays out.
  ASSERT_TRUE(client_
                  ->Request("POST", base,
                            R"({"metadata":{"name":"a","labels":{"t":"1"}}})")
                  .ok());
  process::RealClock clock;
  InformerOptions options;
  options.path = base;
  options.selector = "labelSelector=t%3D1";
  Informer informer(config_, options, clock);
  std::mutex mu;
  std::vector<std::string> events;
  informer.AddHandler([&](EventType t, const nlohmann::json& o) {
    const std::lock_guard<std::mutex> lock(mu);
    events.push_back(absl::StrCat(t == EventType::kAdded      ? "add:"
                                  : t == EventType::kModified ? "mod:"
                                                              : "del:",
                                  ObjectKey(o)));
  });
  const auto saw = [&](const std::string& e) {
    for (int i = 0; i < 100; ++i) {
      {
        const std::lock_guard<std::mutex> lock(mu);
        if (std::find(events.begin(), events.end(), e) != events.end()) {
          return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  informer.Start();
  EXPECT_TRUE(saw("add:" + ns_ + "/a"));
  EXPECT_TRUE(informer.Synced());
  ASSERT_TRUE(client_
                  ->Request("POST", base,
                            R"({"metadata":{"name":"b","labels":{"t":"1"}}})")
                  .ok());
  EXPECT_TRUE(saw("add:" + ns_ + "/b"));
  ASSERT_TRUE(client_
                  ->Request("PATCH", base + "/a", R"({"data":{"k":"v"}})",
                            "application/merge-patch+json")
                  .ok());
  EXPECT_TRUE(saw("mod:" + ns_ + "/a"));
  EXPECT_EQ(informer.Size(), 2U);
  ASSERT_NE(informer.Get(ns_ + "/a"), nullptr);
  EXPECT_EQ((*informer.Get(ns_ + "/a"))["data"]["k"], "v");
  EXPECT_FALSE(
      (*informer.Get(ns_ + "/a"))["metadata"].contains("managedFields"));

  informer.Stop();  // the watch drops...
  ASSERT_TRUE(client_->Request("DELETE", base + "/b", "").ok());
  informer.Start();  // ...and the relist finds b gone
  EXPECT_TRUE(saw("del:" + ns_ + "/b"));
  EXPECT_EQ(informer.Size(), 1U);
  EXPECT_EQ(informer.stats().lists, 2);
  informer.Stop();
}

// The watch-expired path, forced: the informer falls behind while its
// handler is stuck, its watch ends, two changes happen that no watch of it
// sees, and etcd is compacted past its resourceVersion. Its next watch gets
// 410 Gone (ConfigMaps have no watch cache on the test cluster, so the
// watch reaches etcd); it relists and reports both changes -- the deletion
// included -- and misses nothing.
TEST_F(KubeClientTest, WatchExpiredByCompactionRelists) {
  const std::string etcd_url = testcluster::TestEtcdUrl();
  ASSERT_FALSE(etcd_url.empty()) << "tests/cluster/up writes run/etcd.url";
  const std::string base = "/api/v1/namespaces/" + ns_ + "/configmaps";
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(client_
                    ->Request("POST", base,
                              absl::StrCat(R"({"metadata":{"name":")", name,
                                           R"(","labels":{"t":"1"}}})"))
                    .ok());
  }
  process::RealClock clock;
  InformerOptions options;
  options.path = base;
  options.selector = "labelSelector=t%3D1";
  options.watch_timeout = absl::Seconds(2);
  Informer informer(config_, options, clock);
  std::mutex mu;
  std::condition_variable cv;
  bool hold = false;  // the handler blocks on the next event while set
  bool holding = false;
  std::vector<std::string> events;
  informer.AddHandler([&](EventType t, const nlohmann::json& o) {
    std::unique_lock<std::mutex> lock(mu);
    events.push_back(absl::StrCat(t == EventType::kAdded      ? "add:"
                                  : t == EventType::kModified ? "mod:"
                                                              : "del:",
                                  ObjectKey(o)));
    holding = hold;
    cv.notify_all();
    cv.wait(lock, [&] { return !hold; });
    holding = false;
  });
  const auto saw = [&](const std::string& e) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] {
      return std::find(events.begin(), events.end(), e) != events.end();
    });
  };
  informer.Start();
  ASSERT_TRUE(saw("add:" + ns_ + "/b"));

  // Stick the handler on the next event, then let the server end that
  // watch (its timeout is 2 s) while nothing reads it.
  {
    const std::lock_guard<std::mutex> lock(mu);
    hold = true;
  }
  ASSERT_TRUE(client_
                  ->Request("PATCH", base + "/a", R"({"data":{"k":"v"}})",
                            "application/merge-patch+json")
                  .ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return holding; }));
  }
  std::this_thread::sleep_for(std::chrono::seconds(4));
  // Unseen by any watch: b goes, c comes.
  ASSERT_TRUE(client_->Request("DELETE", base + "/b", "").ok());
  ASSERT_TRUE(client_
                  ->Request("POST", base,
                            R"({"metadata":{"name":"c","labels":{"t":"1"}}})")
                  .ok());
  // Compact etcd at its current revision: the informer's resourceVersion
  // (a's patch) is now history.
  httplib::Client etcd(etcd_url);
  const auto range = etcd.Post("/v3/kv/range", R"({"key":"Lw=="})",
                               "application/json");  // key "/"
  ASSERT_TRUE(range && range->status == 200);
  const std::string revision =
      nlohmann::json::parse(range->body)["header"]["revision"];
  const auto compacted = etcd.Post(
      "/v3/kv/compaction",
      absl::StrCat(R"({"revision":")", revision, R"(","physical":true})"),
      "application/json");
  ASSERT_TRUE(compacted && compacted->status == 200)
      << (compacted ? compacted->body : "no answer");
  {
    const std::lock_guard<std::mutex> lock(mu);
    hold = false;
  }
  cv.notify_all();

  EXPECT_TRUE(saw("del:" + ns_ + "/b"));
  EXPECT_TRUE(saw("add:" + ns_ + "/c"));
  EXPECT_GE(informer.stats().expired, 1) << "the watch got 410 Gone";
  EXPECT_GE(informer.stats().lists, 2) << "and the informer relisted";
  EXPECT_EQ(informer.Size(), 2U);
  EXPECT_EQ(informer.Get(ns_ + "/b"), nullptr);
  ASSERT_NE(informer.Get(ns_ + "/a"), nullptr);
  EXPECT_EQ((*informer.Get(ns_ + "/a"))["data"]["k"], "v");
  informer.Stop();
}

// client-go's lease algorithm against the real API server, with short
// timings: one leader; a standby takes over when the leader stops
// renewing, but not before the lease expires on its own clock; Release
// hands over at once.
TEST_F(KubeClientTest, LeaderElectionOneLeaderAndTakeover) {
  process::RealClock clock;
  auto client_b = KubeClient::Create(config_);
  ASSERT_TRUE(client_b.ok());
  LeaderElectionConfig ca{.lease_namespace = ns_,
                          .lease_name = "lead",
                          .identity = "a",
                          .lease_duration = absl::Seconds(3),
                          .renew_deadline = absl::Seconds(2),
                          .retry_period = absl::Milliseconds(500)};
  ASSERT_TRUE(ValidateLeaderElectionConfig(ca).ok());
  LeaderElectionConfig cb = ca;
  cb.identity = "b";
  LeaderElector a(*client_, ca, clock);
  LeaderElector b(**client_b, cb, clock);
  EXPECT_TRUE(a.TryAcquireOrRenew()) << a.last_error();
  EXPECT_FALSE(b.TryAcquireOrRenew());
  EXPECT_TRUE(a.TryAcquireOrRenew());  // renew
  // a stops renewing (as if killed): b must wait out the lease duration
  // measured from when it saw the record change.
  const absl::Time start = absl::Now();
  while (!b.TryAcquireOrRenew()) {
    ASSERT_LT(absl::Now() - start, absl::Seconds(10)) << "no takeover";
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_GE(absl::Now() - start, absl::Seconds(2.5));
  EXPECT_FALSE(a.TryAcquireOrRenew());  // a is not leader any more
  auto lease = client_->Request(
      "GET", "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases/lead",
      "");
  ASSERT_TRUE(lease.ok());
  const auto spec = nlohmann::json::parse(lease->body)["spec"];
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
  b.Release();
  EXPECT_TRUE(a.TryAcquireOrRenew()) << "no handover after Release";
}

// Optimistic concurrency: a write that lands between our read and our PUT
// makes the PUT conflict (409); UpdateWithRetry reads again, re-applies
// our change on top of theirs, and succeeds -- nothing is lost.
TEST_F(KubeClientTest, UpdateWithRetrySurvivesAConflictingWrite) {
  const std::string path = "/api/v1/namespaces/" + ns_ + "/configmaps";
  ASSERT_TRUE(
      client_->Request("POST", path, R"({"metadata":{"name":"c"}})").ok());
  auto other = KubeClient::Create(config_);
  ASSERT_TRUE(other.ok());
  int calls = 0;
  const absl::Status st =
      UpdateWithRetry(*client_, path + "/c", [&](nlohmann::json& obj) {
        if (++calls == 1) {  // someone else writes after our first read
          ASSERT_TRUE((*other)
                          ->Request("PATCH", path + "/c",
                                    R"({"data":{"theirs":"1"}})",
                                    "application/merge-patch+json")
                          .ok());
        }
        obj["data"]["ours"] = "1";
      });
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(calls, 2);  // the first PUT conflicted
  auto got = client_->Request("GET", path + "/c", "");
  ASSERT_TRUE(got.ok());
  const auto data = nlohmann::json::parse(got->body)["data"];
  EXPECT_EQ(data["ours"], "1");
  EXPECT_EQ(data["theirs"], "1");
}

}  // namespace
}  // namespace pilotlight::kube
