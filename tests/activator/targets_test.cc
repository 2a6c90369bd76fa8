// Targets with fakes: which pods requests may go to (kubelet Ready and the
// model answering its health path), the cap and activation timeout from
// the controller's status, and the controller replicas found by label.
#include "controller/activator/targets.h"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_cluster.h"

namespace pilotlight::activator {
namespace {

using json = nlohmann::json;
using kube::EventType;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

json Pod(const std::string& ns, const std::string& name, const std::string& ip,
         bool ready, json labels = json::object()) {
  return {
      {"metadata",
       {{"namespace", ns},
        {"name", name},
        {"uid", name + "-uid"},
        {"labels", std::move(labels)},
        {"ownerReferences",
         {{{"kind", "ReplicaSet"}, {"name", "d-abc"}, {"controller", true}}}}}},
      {"spec",
       {{"containers",
         {{{"ports",
            {{{"name", "metrics"}, {"containerPort", 9400}},
             {{"name", "http"}, {"containerPort", 8080}}}},
           {"readinessProbe", {{"httpGet", {{"path", "/v1/health"}}}}}}}}}},
      {"status",
       {{"phase", "Running"},
        {"podIP", ip},
        {"conditions",
         {{{"type", "Ready"},
           {"status", ready ? "True" : "False"},
           {"lastTransitionTime", "2026-12-01T00:00:00Z"}}}}}}};
}

class TargetsTest : public ::testing::Test {
 protected:
  TargetsTest() {
    json ia = {{"metadata", {{"namespace", "ml"}, {"name", "chat"}}},
               {"spec", {{"variants", {{{"deployment", "d"}}}}}},
               {"status",
                {{"concurrencyPerReplica", 6},
                 {"coldStart", {{"leadSeconds", 40.0}}}}}};
    index_.OnAutoscaler(EventType::kAdded, ia);
    autoscalers_.Put(ia);
    index_.OnReplicaSet(EventType::kAdded, {{"metadata",
                                             {{"namespace", "ml"},
                                              {"name", "d-abc"},
                                              {"ownerReferences",
                                               {{{"kind", "Deployment"},
                                                 {"name", "d"},
                                                 {"controller", true}}}}}}});
  }
  void AddPod(const json& pod) {
    index_.OnPod(pods_.Put(pod), pod, absl::Now());
    targets_.Changed("ml/chat");
  }

  fakes::MemoryCache autoscalers_;
  fakes::MemoryCache pods_;
  cluster::ClusterIndex index_;
  Router router_{HoldLimits{}};
  // Probes run in parallel: the fake's state is under a lock.
  std::mutex mu_;
  std::map<std::string, bool> answers_;  // address -> answers its probe
  std::vector<std::string> probed_;
  // When set, called inside each probe (outside the lock).
  std::function<bool(const std::string&)> during_probe_;
  Targets targets_{TargetOptions{},
                   router_,
                   autoscalers_,
                   pods_,
                   index_,
                   [this](const std::string& address, const std::string& path,
                          absl::Duration) {
                     bool ok = true;
                     if (during_probe_) {
                       ok = during_probe_(address);
                     }
                     const std::lock_guard<std::mutex> lock(mu_);
                     probed_.push_back(address + path);
                     return ok && answers_[address];
                   }};
};

TEST_F(TargetsTest, ReadyAndAnsweringPodsOnlyWithTheControllersCap) {
  AddPod(Pod("ml", "a", "10.0.0.1", true));
  AddPod(Pod("ml", "b", "10.0.0.2", false));  // kubelet: not Ready
  AddPod(Pod("ml", "c", "10.0.0.3", true));   // Ready, model still loading
  answers_["10.0.0.1:8080"] = true;
  EXPECT_EQ(targets_.Refresh(), 1);  // c is still pending
  EXPECT_EQ(targets_.CountOf("ml/chat"), 1U);
  // The port named http and the readiness probe's path.
  EXPECT_THAT(probed_, UnorderedElementsAre("10.0.0.1:8080/v1/health",
                                            "10.0.0.3:8080/v1/health"));
  const EndpointDemand l = router_.DemandOf("ml/chat", absl::Now());
  EXPECT_FALSE(l.no_replica);
  // c answers: probed again on the next pass, without an event.
  answers_["10.0.0.3:8080"] = true;
  probed_.clear();
  EXPECT_EQ(targets_.Refresh(), 0);
  EXPECT_EQ(targets_.CountOf("ml/chat"), 2U);
  // Answered once: trusted, not probed again while Ready.
  targets_.Changed("ml/chat");
  probed_.clear();
  targets_.Refresh();
  EXPECT_THAT(probed_, IsEmpty());
  // The cap is the controller's concurrencyPerReplica: 2 pods x 6.
  std::vector<Lease> leases;
  for (int i = 0; i < 12; ++i) {
    leases.push_back(*router_.Acquire("ml/chat", 0, absl::Now()));
  }
  EXPECT_EQ(router_.Acquire("ml/chat", 0, absl::Now()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

// A pod the controller marked leaving (its node announced its end) gets
// new requests only while its endpoint has no other pod.
TEST_F(TargetsTest, ALeavingPodIsATargetOnlyWhenThereIsNoOther) {
  json leaving = Pod("ml", "a", "10.0.0.1", true);
  leaving["metadata"]["annotations"][cluster::kLeavingAnnotation] =
      "node n1: karpenter.sh/disrupted since 2026-12-01T00:00:00Z";
  answers_["10.0.0.1:8080"] = true;
  answers_["10.0.0.2:8080"] = true;
  AddPod(leaving);
  AddPod(Pod("ml", "b", "10.0.0.2", true));
  targets_.Refresh();
  EXPECT_EQ(targets_.CountOf("ml/chat"), 1U);
  for (int i = 0; i < 6; ++i) {  // b's whole cap, never a
    absl::StatusOr<Lease> l = router_.Acquire("ml/chat", 0, absl::Now());
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->address(), "10.0.0.2:8080");
  }
  // b is gone: a serves rather than requests being held.
  index_.OnPod(EventType::kDeleted, *pods_.Erase("ml/b"), absl::Now());
  targets_.Changed("ml/chat");
  targets_.Refresh();
  absl::StatusOr<Lease> l = router_.Acquire("ml/chat", 0, absl::Now());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->address(), "10.0.0.1:8080");
}

// An endpoint with a spec.sleepPool sends to its engine on each pool pod
// (the pod's IP at the pool's port) while it has no pod of its own to send
// to; the engines of one pool pod are each other's neighbours.
TEST_F(TargetsTest, PoolEnginesServeWhileTheEndpointHasNoPodOfItsOwn) {
  const auto autoscaler = [&](const std::string& name, const std::string& dep,
                              int port) {
    json ia = {{"metadata", {{"namespace", "ml"}, {"name", name}}},
               {"spec",
                {{"variants", {{{"deployment", dep}}}},
                 {"sleepPool", {{"deployment", "pool"}, {"port", port}}}}}};
    index_.OnAutoscaler(EventType::kModified, ia);
    autoscalers_.Put(ia);
  };
  autoscaler("chat", "d", 8001);
  autoscaler("code", "e", 8002);
  index_.OnReplicaSet(EventType::kAdded, {{"metadata",
                                           {{"namespace", "ml"},
                                            {"name", "pool-abc"},
                                            {"ownerReferences",
                                             {{{"kind", "Deployment"},
                                               {"name", "pool"},
                                               {"controller", true}}}}}}});
  const auto pool_pod = [&](const std::string& name, const std::string& ip) {
    json pod = Pod("ml", name, ip, true);
    pod["metadata"]["ownerReferences"][0]["name"] = "pool-abc";
    for (const std::string& k :
         index_.OnPod(pods_.Put(pod), pod, absl::Now())) {
      targets_.Changed(k);
    }
  };
  pool_pod("p1", "10.0.1.1");
  pool_pod("p2", "10.0.1.2");
  for (const char* a : {"10.0.1.1:8001", "10.0.1.2:8001", "10.0.1.1:8002",
                        "10.0.1.2:8002", "10.0.0.1:8080"}) {
    answers_[a] = true;
  }
  targets_.ChangedAll();
  EXPECT_EQ(targets_.Refresh(), 0);
  // Probed at each endpoint's own port, on the pod's health path.
  EXPECT_THAT(probed_, UnorderedElementsAre("10.0.1.1:8001/v1/health",
                                            "10.0.1.2:8001/v1/health",
                                            "10.0.1.1:8002/v1/health",
                                            "10.0.1.2:8002/v1/health"));
  EXPECT_EQ(targets_.CountOf("ml/chat"), 2U);
  const absl::StatusOr<Lease> l = router_.Acquire("ml/chat", 0, absl::Now());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_THAT(l->address(), ::testing::StartsWith("10.0.1."));
  EXPECT_THAT(l->address(), ::testing::EndsWith(":8001"));
  EXPECT_EQ(router_.InFlightAt(l->address()), 1);
  EXPECT_THAT(targets_.Neighbours("10.0.1.1:8001"),
              ElementsAre("10.0.1.1:8002"));
  EXPECT_THAT(targets_.Neighbours("10.0.1.2:8002"),
              ElementsAre("10.0.1.2:8001"));
  EXPECT_THAT(targets_.Neighbours("10.0.0.1:8080"), IsEmpty());
  // A pod of its own answers: the pool is no target of it any more, and
  // its engines there are still the pool pods' neighbours.
  AddPod(Pod("ml", "a", "10.0.0.1", true));
  targets_.Refresh();
  EXPECT_EQ(targets_.CountOf("ml/chat"), 1U);
  const absl::StatusOr<Lease> own = router_.Acquire("ml/chat", 0, absl::Now());
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->address(), "10.0.0.1:8080");
  EXPECT_THAT(targets_.Neighbours("10.0.1.1:8002"),
              ElementsAre("10.0.1.1:8001"));
  // A pool pod gone: so are its engines.
  for (const std::string& k :
       index_.OnPod(EventType::kDeleted, *pods_.Erase("ml/p2"), absl::Now())) {
    targets_.Changed(k);
  }
  targets_.Refresh();
  EXPECT_THAT(targets_.Neighbours("10.0.1.2:8002"), IsEmpty());
  EXPECT_EQ(targets_.CountOf("ml/code"), 1U);
  // The endpoint deleted: its engines are no one's neighbours.
  index_.OnAutoscaler(EventType::kDeleted, *autoscalers_.Get("ml/code"));
  autoscalers_.Erase("ml/code");
  targets_.Changed("ml/code");
  targets_.Refresh();
  EXPECT_THAT(targets_.Neighbours("10.0.1.1:8001"), IsEmpty());
}

TEST_F(TargetsTest, ARefusedPodIsProbedAgainBeforeItIsTrusted) {
  answers_["10.0.0.1:8080"] = true;
  AddPod(Pod("ml", "a", "10.0.0.1", true));
  targets_.Refresh();
  router_.Remove("ml/chat", "10.0.0.1:8080");  // the proxy: refused
  answers_["10.0.0.1:8080"] = false;
  probed_.clear();
  targets_.Refresh();
  EXPECT_THAT(probed_, ElementsAre("10.0.0.1:8080/v1/health"));
  EXPECT_EQ(targets_.CountOf("ml/chat"), 0U);
}

// Pods that accept and never answer cost one probe timeout a pass, not one
// each: the probes of a pass run at once. Each fake probe here answers only
// once all three are in flight together (waiting up to 5 s), so probes run
// one after another fail it.
TEST_F(TargetsTest, ProbesOfAPassRunAtOnce) {
  std::atomic<int> in_flight{0};
  during_probe_ = [&](const std::string&) {
    ++in_flight;
    const absl::Time until = absl::Now() + absl::Seconds(5);
    while (in_flight.load() < 3 && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    return in_flight.load() >= 3;
  };
  for (const char* ip : {"10.0.0.1", "10.0.0.2", "10.0.0.3"}) {
    answers_[absl::StrCat(ip, ":8080")] = true;
  }
  AddPod(Pod("ml", "a", "10.0.0.1", true));
  AddPod(Pod("ml", "b", "10.0.0.2", true));
  AddPod(Pod("ml", "c", "10.0.0.3", true));
  EXPECT_EQ(targets_.Refresh(), 0);
  EXPECT_EQ(targets_.CountOf("ml/chat"), 3U);
}

TEST_F(TargetsTest, ActivationTimeoutFollowsThePredictedColdStart) {
  // 1.5 x 40 s + 30 s.
  EXPECT_EQ(targets_.TimeoutsOf("ml/chat").activation, absl::Seconds(90));
  // No prediction yet: the default.
  EXPECT_EQ(targets_.TimeoutsOf("ml/other").activation,
            TargetOptions{}.timeouts.activation);
  // With a sleep pool, a lead more: a wake that stalls is waited on for a
  // lead before the endpoint's own replica starts.
  json pooled = {{"metadata", {{"namespace", "ml"}, {"name", "pooled"}}},
                 {"spec",
                  {{"variants", {{{"deployment", "d"}}}},
                   {"sleepPool", {{"deployment", "pool"}, {"port", 8001}}}}},
                 {"status", {{"coldStart", {{"leadSeconds", 40.0}}}}}};
  autoscalers_.Put(pooled);
  EXPECT_EQ(targets_.TimeoutsOf("ml/pooled").activation, absl::Seconds(130));
}

TEST(ControllerAddressesTest, ReadyLabelledPodsInTheNamespace) {
  fakes::MemoryCache pods;
  const json labels = {{"app.kubernetes.io/name", "pilotlight-controller"}};
  pods.Put(Pod("pilotlight-system", "c-1", "10.1.0.2", true, labels));
  pods.Put(Pod("pilotlight-system", "c-0", "10.1.0.1", true, labels));
  pods.Put(Pod("pilotlight-system", "c-2", "10.1.0.3", false, labels));
  pods.Put(Pod("other", "c-3", "10.1.0.4", true, labels));
  pods.Put(Pod("pilotlight-system", "x", "10.1.0.5", true));
  EXPECT_THAT(
      ControllerAddresses(pods, "pilotlight-system",
                          "app.kubernetes.io/name=pilotlight-controller", 9090),
      ElementsAre("10.1.0.1:9090", "10.1.0.2:9090"));
}

}  // namespace
}  // namespace pilotlight::activator
