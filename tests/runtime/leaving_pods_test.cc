// Pods on a node that announced its end: which taints announce it, the
// replicas written while replacements start (table), and the timeline of a
// spot interruption notice with fakes and explicit times.
#include "controller/runtime/leaving_pods.h"

#include <algorithm>

#include "tests/runtime/reconciler_fixture.h"

namespace pilotlight::runtime {
namespace {

// Which taints say a pod's node goes: the notice keys whatever their
// effect; NoExecute unless the pod tolerates it for ever.
TEST(LeavingPodsTest, WhichTaintsAnnounceTheEnd) {
  const std::vector<std::string> keys = cluster::DefaultNoticeTaints();
  const json plain = {{"spec", json::object()}};
  const json dedicated = {{"spec",
                           {{"tolerations",
                             {{{"key", "dedicated"},
                               {"operator", "Equal"},
                               {"value", "gpu"},
                               {"effect", "NoExecute"}},
                              {{"key", "node.kubernetes.io/unreachable"},
                               {"operator", "Exists"},
                               {"effect", "NoExecute"},
                               {"tolerationSeconds", 300}}}}}}};
  const json everything = {
      {"spec", {{"tolerations", {{{"operator", "Exists"}}}}}}};
  struct Case {
    cluster::Taint taint;
    const json* pod;
    bool announces;
  };
  const Case cases[] = {
      {{"karpenter.sh/disrupted", "", "NoSchedule", {}}, &plain, true},
      {{"karpenter.sh/disrupted", "", "NoSchedule", {}}, &everything, true},
      {{"aws-node-termination-handler/spot-itn", "x", "NoSchedule", {}},
       &plain,
       true},
      {{"cloud.google.com/impending-node-termination", "", "NoSchedule", {}},
       &plain,
       true},
      {{"nvidia.com/gpu", "", "NoSchedule", {}}, &plain, false},
      {{"dedicated", "gpu", "NoExecute", {}}, &dedicated, false},
      {{"dedicated", "cpu", "NoExecute", {}}, &dedicated, true},
      {{"dedicated", "gpu", "NoExecute", {}}, &plain, true},
      {{"node.kubernetes.io/unreachable", "", "NoExecute", {}},
       &dedicated,
       true},
      {{"node.kubernetes.io/unreachable", "", "NoExecute", {}},
       &everything,
       false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(cluster::TaintAnnouncesEnd(c.taint, *c.pod, keys), c.announces)
        << c.taint.key << "=" << c.taint.value << ":" << c.taint.effect
        << " on " << c.pod->dump();
  }
}

// A variant's leaving pods stay on top of its decision until its own
// replacements are Ready and the endpoint's ready pods cover its need.
TEST(LeavingPodsTest, ReplicasWithLeavingTable) {
  struct Case {
    std::vector<int32_t> decided, ready, leaving;
    int32_t need;
    std::vector<int32_t> want;
  };
  const Case cases[] = {
      {{2}, {2}, {0}, 2, {2}},  // nothing leaving
      {{2}, {0}, {2}, 2, {4}},  // both leaving, none replaced yet
      {{2}, {1}, {1}, 2, {3}},  // its replacement starting
      {{2}, {2}, {1}, 2, {2}},  // replaced: the leaving pod goes
      {{0}, {0}, {1}, 0, {0}},  // scaled to zero: nothing to keep
      // Spot given up for on-demand: kept until on-demand is Ready.
      {{2, 0}, {0, 0}, {0, 2}, 2, {2, 2}},
      {{2, 0}, {1, 0}, {0, 2}, 2, {2, 2}},
      {{2, 0}, {2, 0}, {0, 2}, 2, {2, 0}},
      // On-demand covers while spot is replaced: kept until spot is Ready.
      {{2, 2}, {2, 0}, {0, 2}, 2, {2, 4}},
      {{0, 2}, {0, 2}, {0, 2}, 2, {0, 2}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(
        policy::ReplicasWithLeaving(c.decided, c.ready, c.leaving, c.need),
        c.want)
        << ::testing::PrintToString(c.decided) << " "
        << ::testing::PrintToString(c.ready) << " "
        << ::testing::PrintToString(c.leaving) << " need " << c.need;
  }
}

// Karpenter is about to consolidate the node of one of two pods: the
// replacement is asked for within the tick (the node event enqueues the
// endpoint), the leaving pod is marked and kept, and once the replacement
// is Ready the ReplicaSet removes the leaving pod (its deletion cost is the
// lowest). Ready pods never fall below two.
TEST_F(ReconcilerTest, ADisruptionTaintIsMakeBeforeBreak) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 2);
  cluster_.AddNode("node-chat-a100-b", {{"pool", "chat-a100"}}, 8);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  Tick();
  const double conc = 1.5 * last_->capacity_per_replica;  // two replicas
  demand_.Set([&](absl::Time, int) { return InFlight(conc, 2); });
  RunFor(absl::Minutes(10));
  ASSERT_EQ(Ready("chat-a100"), 2) << last_->message;
  const std::vector<std::string> before = cluster_.index.PodsOf("ml/chat-a100");

  const absl::Time notice = clock_.Now();
  cluster_.TaintNode("node-chat-a100", "karpenter.sh/disrupted", "NoSchedule",
                     notice);
  EXPECT_EQ(cluster_.notified(), std::vector<std::string>{"ml/chat"})
      << "the node event enqueues the endpoint";
  Tick();
  EXPECT_EQ(Replicas("chat-a100"), 4) << "two replacements, two kept";
  EXPECT_EQ(out_.leaving.size(), 2u);
  for (const std::string& p : before) {
    const json& pod = *cluster_.pods.Get(p);
    EXPECT_THAT(StringField(pod, {"metadata", "annotations", kLeaving}),
                HasSubstr("node node-chat-a100: karpenter.sh/disrupted since"));
    EXPECT_EQ(StringField(pod, {"metadata", "annotations", kPodDeletionCost}),
              absl::StrCat(kLeavingDeletionCost));
  }
  int least_ready = 2;
  std::optional<absl::Time> replaced;
  while (!replaced && clock_.Now() < notice + absl::Minutes(2)) {
    Tick();
    least_ready = std::min(least_ready, Ready("chat-a100"));
    const std::vector<std::string> now = cluster_.index.PodsOf("ml/chat-a100");
    if (Replicas("chat-a100") == 2 &&
        std::none_of(now.begin(), now.end(), [&](const std::string& p) {
          return std::find(before.begin(), before.end(), p) != before.end();
        })) {
      replaced = clock_.Now();
    }
  }
  ASSERT_TRUE(replaced.has_value()) << last_->message;
  EXPECT_LE(*replaced - notice, kColdStart + 3 * kTick)
      << "the leaving pods go as soon as the replacements are Ready";
  EXPECT_EQ(least_ready, 2) << "capacity never fell while replacing";
  EXPECT_EQ(Ready("chat-a100"), 2);
}

// Batch on spot; the spot node is tainted by the termination handler two
// minutes before it goes. Within the tick on-demand is asked to cover (the
// notice makes spot unhealthy) and spot replacements are asked for beside
// the leaving pods, which serve until the node goes. When it goes, no
// capacity is lost and no pod is started twice.
TEST_F(ReconcilerTest, ASpotNoticeCoversOnDemandBeforeTheNodeGoes) {
  BatchOnSpotAtTwoReplicas();
  if (HasFatalFailure()) {
    return;
  }

  const absl::Time notice = clock_.Now();
  cluster_.TaintNode("node-batch-spot", "aws-node-termination-handler/spot-itn",
                     "NoSchedule", notice);
  Tick();
  EXPECT_EQ(Replicas("batch-od"), 2) << "on-demand covers at once";
  EXPECT_EQ(last_->variants[0].reason, policy::ScaleReason::kSpotFallback);
  EXPECT_EQ(Replicas("batch-spot"), 4) << "spot replaced beside the leaving";
  EXPECT_EQ(out_.leaving.size(), 2u);
  int least_ready = 2;
  while (clock_.Now() < notice + absl::Minutes(2)) {
    Tick();
    least_ready =
        std::min(least_ready, Ready("batch-od") + Ready("batch-spot"));
  }
  EXPECT_EQ(least_ready, 2) << "capacity never fell while replacing";
  EXPECT_EQ(Ready("batch-od"), 2);
  cluster_.RemoveNode("node-batch-spot", clock_.Now());
  Tick();
  Tick();
  EXPECT_EQ(Ready("batch-od"), 2);
  EXPECT_EQ(Replicas("batch-spot"), 2) << "the two replacements, no more";
}

// The replacements land on the noticed node itself (its taint only
// PreferNoSchedule, as a pod tolerating every taint would too): they were
// placed after the notice, so they are the replacements, not pods to
// replace again -- the Deployment never grows past the leaving pods.
TEST_F(ReconcilerTest, ReplacementsOnTheNoticedNodeAreNotReplacedAgain) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 2);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  Tick();
  const double conc = 1.5 * last_->capacity_per_replica;  // two replicas
  demand_.Set([&](absl::Time, int) { return InFlight(conc, 2); });
  RunFor(absl::Minutes(10));
  ASSERT_EQ(Ready("chat-a100"), 2) << last_->message;
  cluster_.TaintNode("node-chat-a100", "karpenter.sh/disrupted",
                     "PreferNoSchedule", clock_.Now());
  int most = 0;
  for (int i = 0; i < 60; ++i) {
    Tick();
    most = std::max(most, Replicas("chat-a100"));
  }
  EXPECT_EQ(most, 4) << "two leaving, two replacements";
  EXPECT_EQ(Replicas("chat-a100"), 2);
  EXPECT_EQ(Ready("chat-a100"), 2);
  EXPECT_EQ(out_.leaving.size(), 2u) << "the old pods only";
}

// A NoExecute taint the pods tolerate for ever (a dedicated node) is no
// notice: nothing is replaced.
TEST_F(ReconcilerTest, ADedicatedNodeTaintIsNoNotice) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 2);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  Tick();
  const double conc = 1.5 * last_->capacity_per_replica;
  demand_.Set([&](absl::Time, int) { return InFlight(conc, 2); });
  RunFor(absl::Minutes(5));
  ASSERT_EQ(Replicas("chat-a100"), 2);
  // Both pods tolerate dedicated=gpu:NoExecute (as the template would say).
  for (const std::string& p : cluster_.index.PodsOf("ml/chat-a100")) {
    json pod = *cluster_.pods.Get(p);
    pod["spec"]["tolerations"] = {{{"key", "dedicated"},
                                   {"operator", "Exists"},
                                   {"effect", "NoExecute"}}};
    cluster_.index.OnPod(cluster_.pods.Put(pod), pod, clock_.Now());
  }
  cluster_.TaintNode("node-chat-a100", "dedicated", "NoExecute", clock_.Now());
  RunFor(absl::Minutes(2));
  EXPECT_EQ(Replicas("chat-a100"), 2);
  EXPECT_TRUE(out_.leaving.empty());
}

}  // namespace
}  // namespace pilotlight::runtime
