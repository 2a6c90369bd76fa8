// The observing room alone: facts read off pods, the index's joins, and
// the status value's merge patch.
#include "controller/base/json_fields.h"
#include "controller/cluster/cluster_index.h"
#include "controller/cluster/pod_facts.h"
#include "controller/runtime/endpoint_status.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pilotlight::runtime {
namespace {

using json = nlohmann::json;
using kube::EventType;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

json Pod(const std::string& name, const std::string& rs) {
  return {{"metadata",
           {{"namespace", "ml"},
            {"name", name},
            {"uid", name},
            {"creationTimestamp", "2026-01-01T00:00:00Z"},
            {"labels", {{"pod-template-hash", "abc12"}}},
            {"ownerReferences",
             {{{"kind", "ReplicaSet"}, {"name", rs}, {"controller", true}}}}}},
          {"spec",
           {{"nodeName", "n1"},
            {"containers",
             {{{"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}}}}}},
          {"status", {{"phase", "Running"}}}};
}

json ReplicaSet(const std::string& name, const std::string& deployment) {
  return {{"metadata",
           {{"namespace", "ml"},
            {"name", name},
            {"ownerReferences",
             {{{"kind", "Deployment"},
               {"name", deployment},
               {"controller", true}}}}}}};
}

// Pods reach their Deployment through ownerReferences, whatever the
// ReplicaSet is called, and in either order of arrival.
TEST(ClusterIndexTest, PodsFollowOwnerReferences) {
  cluster::ClusterIndex index;
  index.OnAutoscaler(EventType::kAdded,
                     {{"metadata", {{"namespace", "ml"}, {"name", "chat"}}},
                      {"spec", {{"variants", {{{"deployment", "chat"}}}}}}});
  // The pod first: its ReplicaSet is not known yet.
  EXPECT_TRUE(
      index.OnPod(EventType::kAdded, Pod("p1", "renamed"), kNow).empty());
  EXPECT_EQ(
      index.OnReplicaSet(EventType::kAdded, ReplicaSet("renamed", "chat")),
      cluster::ClusterIndex::Keys{"ml/chat"});
  // A pod whose RS name ends in its hash but whose RS belongs elsewhere.
  index.OnReplicaSet(EventType::kAdded, ReplicaSet("chat-abc12", "other"));
  index.OnPod(EventType::kAdded, Pod("p2", "chat-abc12"), kNow);
  EXPECT_EQ(index.PodsOf("ml/chat"), std::vector<std::string>{"ml/p1"});
  EXPECT_EQ(index.PodsOf("ml/other"), std::vector<std::string>{"ml/p2"});
  index.OnPod(EventType::kDeleted, Pod("p1", "renamed"), kNow);
  EXPECT_TRUE(index.PodsOf("ml/chat").empty());
}

// An evicted pod is dated by when it stopped, not by when it was created.
TEST(PodFactsTest, DisruptionIsDatedWhenThePodStopped) {
  json p = Pod("p", "rs");
  EXPECT_FALSE(cluster::DisruptedAt(p, kNow).has_value());
  p["status"] = {{"phase", "Failed"},
                 {"reason", "Evicted"},
                 {"conditions",
                  {{{"type", "Ready"},
                    {"status", "False"},
                    {"lastTransitionTime", "2027-01-15T08:00:00Z"}}}}};
  EXPECT_EQ(cluster::DisruptedAt(p, kNow),
            *ParseTime(json("2027-01-15T08:00:00Z")));
  p["status"]["conditions"] = json::array();
  EXPECT_EQ(cluster::DisruptedAt(p, kNow), kNow)
      << "undated: when it was seen so";
  p["status"]["conditions"] = {
      {{"type", "DisruptionTarget"},
       {"status", "True"},
       {"lastTransitionTime", "2027-01-15T07:59:00Z"}}};
  EXPECT_EQ(cluster::DisruptedAt(p, kNow),
            *ParseTime(json("2027-01-15T07:59:00Z")));
}

// Free GPUs: allocatable of the matching Ready nodes minus the bound pods'.
TEST(ClusterIndexTest, FreeGpusOfAPool) {
  cluster::ClusterIndex index;
  const json node = {
      {"metadata", {{"name", "n1"}, {"labels", {{"pool", "a"}}}}},
      {"status",
       {{"allocatable", {{"nvidia.com/gpu", "8"}}},
        {"conditions",
         {{{"type", "Ready"},
           {"status", "True"},
           {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}}};
  index.OnNode(EventType::kAdded, node, kNow);
  EXPECT_EQ(index.FreeGpus({{"pool", "a"}}), 8);
  EXPECT_EQ(index.FreeGpus({{"pool", "b"}}), 0);
  EXPECT_FALSE(index.FreeGpus({}).has_value()) << "no selector: unknown";
  index.OnPod(EventType::kAdded, Pod("p1", "rs"), kNow);
  EXPECT_EQ(index.FreeGpus({{"pool", "a"}}), 6);
  json done = Pod("p1", "rs");
  done["status"]["phase"] = "Succeeded";
  index.OnPod(EventType::kModified, done, kNow);
  EXPECT_EQ(index.FreeGpus({{"pool", "a"}}), 8) << "a finished pod holds none";
  json cordoned = node;
  cordoned["spec"]["unschedulable"] = true;
  index.OnNode(EventType::kModified, cordoned, kNow);
  EXPECT_EQ(index.FreeGpus({{"pool", "a"}}), 0);
}

// The merge patch clears what a not-ready endpoint no longer has, and a
// status differs whenever any field does.
TEST(EndpointStatusTest, MergePatchClearsStaleFields) {
  EndpointStatus s;
  s.observed_generation = 4;
  s.conditions.Set("Ready", false, "InvalidSpec", "spec.model: bad", kNow);
  const json p = ToMergePatch(s, {kNow, "", nullptr, nullptr, nullptr});
  EXPECT_EQ(p["observedGeneration"], 4);
  EXPECT_TRUE(p.contains("tier") && p["tier"].is_null());
  EXPECT_TRUE(p["lastDecision"].is_null());
  EXPECT_TRUE(p.contains("economics") && p["economics"].is_null());
  EXPECT_TRUE(p.contains("trafficHistory") && p["trafficHistory"].is_null());
  EXPECT_EQ(p["conditions"][0]["reason"], "InvalidSpec");

  EndpointStatus a;
  a.decided = true;
  a.keep_alive_until = kNow;
  EndpointStatus b = a;
  EXPECT_EQ(a, b);
  b.cold_start_lead = absl::Seconds(1);
  EXPECT_FALSE(a == b);
  const json ready = ToMergePatch(
      a, {kNow, "steady", {{"costPerHour", 1}}, {{"seconds", 60}}, nullptr});
  EXPECT_EQ(ready["keepAliveUntil"], FormatRfc3339(kNow));
  EXPECT_EQ(ready["economics"]["costPerHour"], 1);
  EXPECT_EQ(ready["trafficHistory"]["seconds"], 60);
  a.keep_alive_until.reset();
  EXPECT_TRUE(
      ToMergePatch(a, {kNow, "", nullptr, nullptr, nullptr})["keepAliveUntil"]
          .is_null());
}

// status.economics carries the decision's numbers, rounded; a hold has
// none (it decided nothing).
TEST(EndpointStatusTest, EconomicsOfADecision) {
  policy::Decision d;
  d.valid = true;
  d.demand_concurrency = 3.14159;
  d.load_replicas = 2;
  d.warm_pool = 1;
  d.break_even = absl::Seconds(71);
  d.cost_per_hour = 2.4144;
  d.always_on_cost_per_hour = 1.6096;
  d.economics.cold_start_cost_usd = 0.0158722;
  d.economics.idle_cost_per_hour = 0.8048;
  d.economics.warm_pool_cost_per_hour = 0.8048;
  d.economics.cold_starts_per_hour_without_warm = 12;
  d.economics.cold_starts_per_hour_with_warm = 1.5;
  d.economics.tiers = {{.gpu_class = "l4-on-demand",
                        .replicas = 3,
                        .on_demand = 3,
                        .spot = 0,
                        .capacity_per_replica = 4,
                        .cost_per_hour = 2.4144,
                        .meets_slo = true}};
  const json e = EconomicsJson(d);
  EXPECT_EQ(e["demand"]["concurrency"], 3.1416);
  EXPECT_EQ(e["breakEvenSeconds"], 71);
  EXPECT_EQ(e["coldStartCostUSD"], 0.0159);
  EXPECT_EQ(e["warmPool"]["replicas"], 1);
  EXPECT_EQ(e["warmPool"]["coldStartsPerHourWith"], 1.5);
  EXPECT_EQ(e["tiers"][0]["gpuClass"], "l4-on-demand");
  EXPECT_EQ(e["tiers"][0]["meetsSLO"], true);
  d.valid = false;
  EXPECT_TRUE(EconomicsJson(d).is_null());
}

}  // namespace
}  // namespace pilotlight::runtime
