// Timeline tests of the reconciler with fakes and explicit times: a
// FakeCluster (tests/fakes) plays the Deployment controller, scheduler and
// kubelet; FakeDemand is what Prometheus (or the activator) would report;
// RecordingWriters keeps the patches, statuses and Events. No API server,
// no sleeps: each Tick() settles the cluster, opens a demand epoch and
// reconciles once, then moves the fake clock.
#include <algorithm>
#include <cmath>
#include <set>

#include "controller/runtime/counterfactuals.h"
#include "controller/runtime/pool_engines.h"
#include "controller/runtime/pool_sizing.h"
#include "tests/runtime/reconciler_fixture.h"

namespace pilotlight::runtime {
namespace {

// Busy, then idle past the keep-alive: to zero; then demand at zero (what
// the activator reports: requests held) brings it back at once.
TEST_F(ReconcilerTest, ScalesToZeroAndBack) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  const absl::Time idle_from = kT0 + absl::Minutes(5);
  demand_.Set(
      [&](absl::Time t, int) { return InFlight(t < idle_from ? 2 : 0); });
  std::optional<absl::Time> zero_at;
  while (!zero_at && clock_.Now() < kT0 + absl::Hours(1)) {
    Tick();
    if (Replicas("chat-a100") == 0) {
      zero_at = clock_.Now();
    }
  }
  ASSERT_TRUE(zero_at.has_value()) << last_->message;
  EXPECT_GT(*zero_at - idle_from, absl::Seconds(30)) << "kept alive a while";
  EXPECT_EQ(last_->reason, policy::ScaleReason::kScaledToZero);
  EXPECT_TRUE(SawEvent("ScaledToZero"));
  EXPECT_EQ(out_.Condition("ScaledToZero"), "True Idle");
  EXPECT_EQ(out_.status()["lastDecision"]["reason"], "ScaledToZero");
  RunFor(absl::Minutes(5));
  EXPECT_EQ(Replicas("chat-a100"), 0) << "stays at zero while idle";
  EXPECT_EQ(Serving(), "zero");

  // Requests held at zero: one tick to the patch, one cold start to Ready.
  demand_.Set([](absl::Time, int ready) {
    policy::DemandSample s = InFlight(0);
    s.queued = ready == 0 ? 3.0 : 0.0;
    s.in_flight = ready == 0 ? 0.0 : 3.0;
    s.arrivals = 3.0;
    return s;
  });
  const size_t patches = out_.patches.size();
  Tick();
  ASSERT_EQ(out_.patches.size(), patches + 1);
  EXPECT_EQ(out_.patches.back().replicas, 1);
  EXPECT_EQ(last_->reason, policy::ScaleReason::kScaleFromZero);
  EXPECT_EQ(out_.events.back().reason, "ScaledUp");
  RunFor(kColdStart + kTick);
  EXPECT_EQ(Ready("chat-a100"), 1);
  EXPECT_EQ(out_.Condition("ScaledToZero"), "False Serving");
  EXPECT_EQ(Serving(), "replicas");
}

// A starting pod carries the guard against node autoscalers'
// consolidation (karpenter.sh/do-not-disrupt and the cluster autoscaler's
// safe-to-evict) from the first reconcile that sees it until two minutes
// after it turned Ready; then the guard goes. Each is written once.
TEST_F(ReconcilerTest, StartingPodsAreGuardedFromDisruptionUntilWarm) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 0);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int ready) {
    policy::DemandSample s = InFlight(ready == 0 ? 0 : 2);
    s.queued = ready == 0 ? 2.0 : 0.0;
    s.arrivals = 1.0;
    return s;
  });
  Tick();  // scales from zero
  ASSERT_EQ(Replicas("chat-a100"), 1);
  Tick();  // the pod exists now, not ready
  const std::vector<std::string> pods = cluster_.index.PodsOf("ml/chat-a100");
  ASSERT_EQ(pods.size(), 1U);
  const std::string name = pods[0].substr(pods[0].find('/') + 1);
  ASSERT_EQ(out_.guards.size(), 1U);
  EXPECT_EQ(out_.guards[0].pod, name);
  EXPECT_TRUE(out_.guards[0].guard);
  EXPECT_EQ(StringField(*cluster_.pods.Get(pods[0]),
                        {"metadata", "annotations", runtime::kDoNotDisrupt}),
            "true");
  // Ready one cold start after it was created; guarded 2 min more.
  RunFor(kColdStart);
  ASSERT_EQ(Ready("chat-a100"), 1);
  const absl::Time ready_at = clock_.Now();
  while (out_.guards.size() == 1 &&
         clock_.Now() < ready_at + absl::Minutes(5)) {
    Tick();
  }
  ASSERT_EQ(out_.guards.size(), 2U);
  EXPECT_FALSE(out_.guards[1].guard);
  EXPECT_GE(clock_.Now() - ready_at, runtime::kDisruptionWarmUp - kTick);
  EXPECT_LE(clock_.Now() - ready_at,
            runtime::kDisruptionWarmUp + kColdStart + 2 * kTick);
  RunFor(absl::Minutes(2));
  EXPECT_EQ(out_.guards.size(), 2U) << "written once each";
}

// A scale-down spares the busy pods: before the /scale patch each ready
// pod's deletion cost is set to the requests on it, so the ReplicaSet takes
// the idle ones -- here the pod it would otherwise have taken first (the
// newest) is the busy one, and it is the one left. Costs are written only
// when they change.
TEST_F(ReconcilerTest, ScaleDownSparesBusyPods) {
  Pool("chat-a100", "a100-80gb", policy::CapacityType::kOnDemand, 3);
  Endpoint({Variant("chat-a100",
                    ClassName("a100-80gb", policy::CapacityType::kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  Tick();
  const int capacity = last_->capacity_per_replica;
  ASSERT_GT(capacity, 0);
  demand_.Set([&](absl::Time, int) { return InFlight(2.5 * capacity); });
  RunFor(absl::Minutes(2));
  ASSERT_EQ(Replicas("chat-a100"), 3);
  const std::vector<std::string> pods = cluster_.index.PodsOf("ml/chat-a100");
  ASSERT_EQ(pods.size(), 3U);
  const std::string busy = pods.back();
  demand_.SetBusy({{pods[0], 0}, {pods[1], 0.4}, {busy, 3}});
  const size_t patched = out_.patches.size();
  demand_.Set([](absl::Time, int) { return InFlight(3); });
  for (int i = 0; i < 300 && Replicas("chat-a100") == 3; ++i) {
    Tick();
  }
  ASSERT_LT(Replicas("chat-a100"), 3);
  RunFor(absl::Minutes(5));
  EXPECT_EQ(Replicas("chat-a100"), 1);
  cluster_.Settle(clock_.Now());
  // Written once each, before the first scale-down's patch.
  ASSERT_GT(out_.patches.size(), patched);
  EXPECT_LT(out_.patches[patched].replicas, 3);
  std::map<std::string, int32_t> costs;
  for (const auto& c : out_.costs) {
    EXPECT_EQ(c.before_patch, static_cast<int>(patched)) << c.pod;
    EXPECT_TRUE(costs.emplace(absl::StrCat("ml/", c.pod), c.cost).second)
        << c.pod << " written twice";
  }
  EXPECT_EQ(costs, (std::map<std::string, int32_t>{
                       {pods[0], 0}, {pods[1], 0}, {busy, 3}}));
  EXPECT_EQ(cluster_.index.PodsOf("ml/chat-a100"),
            std::vector<std::string>{busy});
}

// The per-endpoint series: made at the first publish, kept across
// re-parses that leave the variants alone (every status write changes the
// resourceVersion), replaced when a variant changes, removed with the
// endpoint.
TEST_F(ReconcilerTest, SeriesFollowTheSpecsVariants) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 1);
  Pool("chat-l4", "l4", kOnDemand, 1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(2); });
  // "deployment/gpu_class/capacity_type" of every desired-replicas series,
  // and how many cost series there are.
  const auto series = [&] {
    std::vector<std::string> out;
    int cost = 0;
    for (const prometheus::MetricFamily& f : registry_.Collect()) {
      for (const prometheus::ClientMetric& m : f.metric) {
        std::map<std::string, std::string> l;
        for (const prometheus::ClientMetric::Label& kv : m.label) {
          l[kv.name] = kv.value;
        }
        if (f.name == "pilotlight_desired_replicas") {
          out.push_back(absl::StrCat(l["deployment"], "/", l["gpu_class"], "/",
                                     l["capacity_type"]));
        }
        cost += f.name == "pilotlight_cost_per_hour_dollars" ? 1 : 0;
      }
    }
    return std::make_pair(out, cost);
  };
  Tick();
  const std::string a100 = absl::StrCat(
      "chat-a100/", ClassName("a100-80gb", kOnDemand), "/OnDemand");
  EXPECT_EQ(series().first, std::vector<std::string>{a100});
  json ia = *cluster_.autoscalers.Get("ml/chat");
  cluster_.PutAutoscaler(ia);  // a new resourceVersion, the same variants
  Tick();
  EXPECT_EQ(series().first, std::vector<std::string>{a100});
  EXPECT_EQ(series().second, 1);
  ia["spec"]["variants"] =
      json::array({Variant("chat-l4", ClassName("l4", kOnDemand))});
  ia["metadata"]["generation"] = 2;
  cluster_.PutAutoscaler(ia);
  Tick();
  EXPECT_EQ(series().first,
            std::vector<std::string>{absl::StrCat(
                "chat-l4/", ClassName("l4", kOnDemand), "/OnDemand")});
  EXPECT_EQ(series().second, 1);
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_engines", "pool", ""), 0.0);
  // A sleep pool named: the pool's engines' series carry it.
  ia["spec"]["sleepPool"] = {{"deployment", "pool"}, {"port", 8001}};
  ia["metadata"]["generation"] = 3;
  cluster_.PutAutoscaler(ia);
  Tick();
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_engines", "pool", "pool"), 0.0);
  EXPECT_FALSE(Gauge("pilotlight_sleep_pool_engines", "pool", "").has_value());
  cluster_.autoscalers.Erase("ml/chat");  // deleted: its series go
  Writers w = out_.writers();
  ASSERT_TRUE(reconciler_->Reconcile("ml/chat", w, true).ok());
  EXPECT_TRUE(series().first.empty());
  EXPECT_EQ(series().second, 0);
  EXPECT_FALSE(Gauge("pilotlight_sleep_pool_engines", "pool", "pool"));
  EXPECT_EQ(Serving(), "");
  // ... and so does what the demand source keeps for it.
  EXPECT_EQ(demand_.forgotten(), std::vector<std::string>{"ml/chat"});
}

// A variant's Deployment that does not exist: Ready=False naming the
// field, a Warning Event, no patch; created later, it is reconciled.
TEST_F(ReconcilerTest, MissingDeploymentIsNotReadyAndNeverPatched) {
  cluster_.PutGpuClass(GpuClass("a100-80gb", kOnDemand));
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(5); });
  RunFor(absl::Minutes(1));
  EXPECT_TRUE(out_.patches.empty());
  EXPECT_EQ(out_.Condition("Ready"), "False DeploymentNotFound");
  EXPECT_THAT(out_.status()["conditions"].dump(),
              HasSubstr("spec.variants[0].deployment: Deployment "
                        "ml/chat-a100 not found"));
  EXPECT_TRUE(SawEvent("DeploymentNotFound"));
  EXPECT_EQ(out_.status_writes, 1) << "written once, not every tick";

  Pool("chat-a100", "a100-80gb", kOnDemand, 0);
  Tick();
  EXPECT_EQ(out_.Condition("Ready"), "True Reconciled");
  EXPECT_EQ(out_.status()["variants"][0]["deployment"], "chat-a100");
}

// Scaled by KEDA (pilotlight.dev/scaled-by: keda): the endpoint is decided
// and its status written as ever, but its replicas are KEDA's to write.
TEST_F(ReconcilerTest, UnderKedaNothingIsPatched) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 0);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  json ia = *cluster_.autoscalers.Get("ml/chat");
  ia["metadata"]["annotations"][kScaledByAnnotation] = "keda";
  cluster_.PutAutoscaler(ia);
  demand_.Set([](absl::Time, int) { return InFlight(5); });
  RunFor(absl::Minutes(1));
  EXPECT_EQ(last_->variants[0].replicas, 1) << last_->message;
  EXPECT_TRUE(out_.patches.empty());
  EXPECT_EQ(Replicas("chat-a100"), 0);
  EXPECT_EQ(out_.status()["variants"][0]["desired"], 1);
}

// Prometheus unreachable: replicas hold, Degraded says why.
TEST_F(ReconcilerTest, MissingMetricsHoldReplicas) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 2);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(80, 3); });
  RunFor(absl::Minutes(3));
  ASSERT_EQ(Replicas("chat-a100"), 2) << last_->message;
  demand_.SetMissing("requests running: connection refused; ");
  for (int i = 0; i < 300; ++i) {  // 10 minutes
    Tick();
    ASSERT_EQ(Replicas("chat-a100"), 2) << last_->message;
  }
  EXPECT_FALSE(last_->valid);
  EXPECT_EQ(out_.Condition("Degraded"), "True MetricsUnavailable");
  EXPECT_THAT(out_.status()["conditions"].dump(),
              HasSubstr("holding replicas: requests running: connection "
                        "refused"));
}

// status.trafficHistory: the arrivals each demand read counted, over the
// unbroken stretch of reads that had them; a stretch without (metrics
// gone) is a gap, and the history starts again after it. Written with the
// status, whenever that changes (here: the Degraded condition).
TEST_F(ReconcilerTest, TrafficHistoryCountsArrivalsAndRestartsAfterAGap) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 2);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(80, 3); });
  RunFor(absl::Minutes(10));
  demand_.SetMissing("requests running: connection refused; ");
  Tick();
  ASSERT_THAT(out_.Condition("Degraded"), HasSubstr("True"));
  json h = out_.status()["trafficHistory"];
  // 300 reads 2 s apart, 3 arrivals each; the first read's came since an
  // unknown time and are left out.
  EXPECT_EQ(h["requests"], 3 * 299);
  EXPECT_EQ(h["seconds"], 598);
  EXPECT_EQ(h["since"], FormatRfc3339(kT0));
  EXPECT_EQ(h["gaps"], 0);
  EXPECT_GT(h["bytes"].get<int64_t>(), 0);
  RunFor(absl::Minutes(2));
  demand_.SetMissing("");
  const absl::Time back = clock_.Now();
  Tick();
  ASSERT_THAT(out_.Condition("Degraded"), HasSubstr("False"));
  h = out_.status()["trafficHistory"];
  EXPECT_EQ(h["gaps"], 1);
  EXPECT_EQ(h["since"], FormatRfc3339(back));
  EXPECT_EQ(h["seconds"], 0);
  EXPECT_EQ(h["requests"], 0);  // came while nobody looked
}

// status.counterfactual: every 10 min the leader replays the endpoint's
// recorded traffic through pilotlight as it runs and the simple policies;
// until the record can support a replay, it says why.
TEST_F(ReconcilerTest, CounterfactualsOfItsOwnTrafficInTheStatus) {
  CounterfactualOptions co;
  co.synchronous = true;
  CounterfactualReplayer replayer(co);
  Pool("chat-a100", "a100-80gb", kOnDemand, 1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  reconciler_->set_counterfactuals(&replayer);
  demand_.Set([](absl::Time, int) { return InFlight(5, 1); });
  Tick();
  json cf = out_.status()["counterfactual"];
  EXPECT_TRUE(cf["candidates"].empty());
  EXPECT_THAT(cf["note"].get<std::string>(),
              HasSubstr("0 min of unbroken history; a replay needs 30 min"));
  // The first replay whose measured part (after a warm-up of at most half)
  // spans 30 min: at 60 min.
  RunFor(absl::Minutes(65));
  cf = out_.status()["counterfactual"];
  ASSERT_EQ(cf["candidates"].size(), 12U) << cf.dump();
  EXPECT_EQ(cf["candidates"][0]["policy"], "pilotlight");
  EXPECT_EQ(cf["candidates"][0]["running"], true);
  EXPECT_GT(cf["candidates"][0]["costPerHour"].get<double>(), 0);
  EXPECT_GT(cf["requests"].get<int64_t>(), 200);
  EXPECT_EQ(cf["windowSeconds"], 3600);
  // A new replay is a change of the status: written as it came.
  EXPECT_EQ(cf["time"], FormatRfc3339(kT0 + absl::Minutes(60)));
  // Steady traffic: every candidate as good and as dear, none cheaper;
  // the series say so, and no Event.
  EXPECT_TRUE(cf["cheaper"].is_null()) << cf.dump();
  EXPECT_EQ(Gauge("pilotlight_counterfactual_cheapest_cost_per_hour_dollars"),
            Gauge("pilotlight_counterfactual_running_cost_per_hour_dollars"));
  EXPECT_NEAR(*Gauge("pilotlight_counterfactual_running_cost_per_hour_dollars"),
              cf["candidates"][0]["costPerHour"].get<double>(), 1e-4);
  for (const fakes::RecordingWriters::Event& ev : out_.events) {
    EXPECT_NE(ev.reason, "CheaperPolicyReplayed") << ev.message;
  }
}

// Run at a target utilisation of 0.5, a steady load holds twice the
// replicas it needs: the replay finds a candidate as good for less, says
// so in the status, the series and one Event -- not one every replay.
TEST_F(ReconcilerTest, ACheaperCandidateIsAnnouncedOnce) {
  CounterfactualOptions co;
  co.synchronous = true;
  CounterfactualReplayer replayer(co);
  decider_config_.target_utilization = 0.5;
  Pool("chat-a100", "a100-80gb", kOnDemand, 2, 16);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  reconciler_->set_counterfactuals(&replayer);
  demand_.Set([](absl::Time, int) { return InFlight(80, 40); });
  Tick();
  // Before a replay: the series are there (a dashboard panel and an alert
  // read them), NaN.
  EXPECT_TRUE(std::isnan(
      *Gauge("pilotlight_counterfactual_running_cost_per_hour_dollars")));
  RunFor(absl::Minutes(65));
  const json cf = out_.status()["counterfactual"];
  ASSERT_EQ(cf["candidates"].size(), 12U) << cf.dump();
  EXPECT_EQ(cf["candidates"][0]["name"], "pilotlight at 0.5");
  ASSERT_TRUE(cf["cheaper"].is_object()) << cf.dump();
  const double running = cf["candidates"][0]["costPerHour"].get<double>();
  const double cheaper = cf["cheaper"]["costPerHour"].get<double>();
  EXPECT_LT(cheaper, running);
  EXPECT_NEAR(cf["cheaper"]["saving"].get<double>(), 1 - cheaper / running,
              1e-4);
  EXPECT_NEAR(*Gauge("pilotlight_counterfactual_running_cost_per_hour_dollars"),
              running, 1e-4);
  EXPECT_NEAR(
      *Gauge("pilotlight_counterfactual_cheapest_cost_per_hour_dollars"),
      cheaper, 1e-4);
  const auto announced = [&] {
    std::vector<std::string> out;
    for (const fakes::RecordingWriters::Event& ev : out_.events) {
      if (ev.reason == "CheaperPolicyReplayed") {
        out.push_back(ev.message);
      }
    }
    return out;
  };
  ASSERT_EQ(announced().size(), 1U);
  EXPECT_THAT(announced()[0],
              HasSubstr(absl::StrCat(cf["cheaper"]["name"].get<std::string>(),
                                     " would have cost")));
  EXPECT_THAT(announced()[0], HasSubstr("at pilotlight at 0.5's SLO "
                                        "attainment and cold-start share or "
                                        "better"));
  // Two more replays finding the same: no more Events.
  RunFor(absl::Minutes(20));
  EXPECT_NE(out_.status()["counterfactual"]["time"], cf["time"]);
  EXPECT_EQ(announced().size(), 1U);
  // Removed with the endpoint.
  cluster_.autoscalers.Erase("ml/chat");
  Writers w = out_.writers();
  ASSERT_TRUE(reconciler_->Reconcile("ml/chat", w, true).ok());
  EXPECT_FALSE(
      Gauge("pilotlight_counterfactual_running_cost_per_hour_dollars"));
}

// A cheaper tier: switched after the hysteresis, and the old Deployment is
// scaled down only once the new one has its replicas ready.
TEST_F(ReconcilerTest, TierSwitchIsMakeBeforeBreakAcrossDeployments) {
  Pool("chat-sxm", "h100-80gb-sxm", kOnDemand, 2);
  Pool("chat-pcie", "h100-80gb-pcie", kOnDemand, 0);
  Endpoint({Variant("chat-sxm", ClassName("h100-80gb-sxm", kOnDemand)),
            Variant("chat-pcie", ClassName("h100-80gb-pcie", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(80, 3); });
  std::optional<absl::Time> switched;
  while (clock_.Now() < kT0 + absl::Minutes(20)) {
    const int old_before = Replicas("chat-sxm");
    Tick();
    if (!switched && Replicas("chat-pcie") > 0) {
      switched = clock_.Now();
      EXPECT_EQ(last_->variants[1].reason, policy::ScaleReason::kTierSwitch);
      EXPECT_THAT(last_->message, HasSubstr("tier switch"));
    }
    if (Replicas("chat-sxm") < old_before) {
      EXPECT_GE(Ready("chat-pcie"), 2)
          << "old tier drained before the new one was ready";
    }
  }
  ASSERT_TRUE(switched.has_value());
  EXPECT_GE(*switched - kT0, absl::Minutes(10)) << "hysteresis";
  EXPECT_EQ(Replicas("chat-sxm"), 0);
  EXPECT_EQ(Ready("chat-pcie"), 2);
  EXPECT_EQ(out_.status()["tier"], ClassName("h100-80gb-pcie", kOnDemand));
}

// Batch on spot; the spot pods are evicted: on-demand covers at once (the
// eviction, not the pods' age, dates the disruption), then spot returns.
TEST_F(ReconcilerTest, SpotPreemptionFallsBackToOnDemand) {
  BatchOnSpotAtTwoReplicas();
  if (HasFatalFailure()) {
    return;
  }

  cluster_.Preempt("ml/batch-spot", 2, clock_.Now());
  bool fell_back = false;
  for (int i = 0; i < 30; ++i) {
    Tick();
    fell_back = fell_back || (last_->variants[0].reason ==
                                  policy::ScaleReason::kSpotFallback &&
                              Replicas("batch-od") >= 2);
  }
  EXPECT_TRUE(fell_back) << last_->message;
  EXPECT_GE(Ready("batch-od") + Ready("batch-spot"), 2);
  // Spot healthy again (its pods ready, the window past): on-demand drains.
  RunFor(absl::Minutes(30));
  EXPECT_EQ(Replicas("batch-od"), 0) << last_->message;
  EXPECT_EQ(Ready("batch-spot"), 2);
}

// Rises that recur: a warm pool beyond the load while the load is low.
TEST_F(ReconcilerTest, WarmPoolFromOwnRises) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  Tick();
  const int cap = last_->capacity_per_replica;
  double level = 0.3 * cap;
  demand_.Set([&](absl::Time, int) { return InFlight(level); });
  bool warm_seen = false;
  for (int cycle = 0; cycle < 20; ++cycle) {
    level = 0.3 * cap;
    RunFor(absl::Minutes(3));
    warm_seen = warm_seen || (out_.status()["warmPool"].get<int>() > 0 &&
                              last_->reason == policy::ScaleReason::kWarmPool);
    level = 1.6 * cap;
    RunFor(absl::Minutes(1));
  }
  EXPECT_TRUE(warm_seen);
  level = 0.3 * cap;
  RunFor(absl::Minutes(3));
  EXPECT_EQ(last_->load_replicas, 1);
  EXPECT_GE(Replicas("chat-a100"), 2) << last_->message;
}

// After a day of history the Deployment is scaled up before the daily
// 08:00 rise arrives.
TEST_F(ReconcilerTest, ScalesAheadOfTheDailyRise) {
  const absl::Time midnight = absl::FromUnixSeconds(1'799'971'200);  // 00:00Z
  clock_.Advance(midnight - clock_.Now());
  Pool("chat-a100", "a100-80gb", kOnDemand, 1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  Tick(absl::Seconds(10));
  const int cap = last_->capacity_per_replica;
  demand_.Set([&](absl::Time t, int) {
    const absl::Duration in_day =
        (t - midnight) - absl::Floor(t - midnight, absl::Hours(24));
    return InFlight(
        (in_day >= absl::Hours(8) && in_day < absl::Hours(20) ? 3.0 : 0.5) *
            cap,
        5);
  });
  const absl::Time rise = midnight + absl::Hours(24 + 8);
  RunFor(rise - absl::Minutes(1) - clock_.Now(), absl::Seconds(10));
  const int before = Replicas("chat-a100");
  RunFor(absl::Seconds(50), absl::Seconds(10));  // up to 07:59:50
  EXPECT_GT(Replicas("chat-a100"), before) << last_->message;
  EXPECT_EQ(last_->reason, policy::ScaleReason::kScaleAhead) << last_->message;
  EXPECT_THAT(last_->message, HasSubstr("time of day"));
}

// No free GPU in the pool: the lead time grows by the class's node start,
// and the status says so.
TEST_F(ReconcilerTest, NodeProvisioningEntersTheLeadWhenThePoolIsFull) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 1, /*gpus=*/1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  RunFor(kColdStart + 2 * kTick);  // the one GPU is taken by the pod
  ASSERT_EQ(Ready("chat-a100"), 1);
  const absl::Duration full = last_->cold_start_lead;
  EXPECT_EQ(out_.status()["variants"][0]["nodeFree"], false);
  cluster_.AddNode("node-more", {{"pool", "chat-a100"}}, 8);
  Tick();
  Tick();
  EXPECT_EQ(out_.status()["variants"][0]["nodeFree"], true);
  EXPECT_EQ(full - last_->cold_start_lead, absl::Seconds(120))
      << "GPUClass provisioning.nodeStartSeconds (default 120)";
  EXPECT_DOUBLE_EQ(out_.status()["coldStart"]["leadSeconds"].get<double>(),
                   absl::ToDoubleSeconds(last_->cold_start_lead));
}

// --policy knative: Knative's loop sets the replicas on the same demand --
// ceil(concurrency / (70 % of the capacity)), the last replica gone a
// stable window plus the grace after the demand, and a request held at
// zero asks for one at once.
// --decision-log: a record per decision (per new demand sample), naming
// the endpoint, with the sample and the replicas the decision set; a
// reconcile without new demand decides nothing and logs nothing.
TEST_F(ReconcilerTest, DecisionLogHasARecordPerDecision) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))});
  std::vector<json> lines;
  reconciler_->set_decision_log(
      [&](const std::string& line) { lines.push_back(json::parse(line)); });
  demand_.Set([](absl::Time, int) { return InFlight(3); });
  Tick();
  Tick();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["endpoint"], "ml/chat");
  EXPECT_DOUBLE_EQ(lines[1]["t"].get<double>(),
                   absl::ToDoubleSeconds(kT0 + kTick - absl::UnixEpoch()));
  ASSERT_EQ(lines[1]["samples"].size(), 1u);
  EXPECT_DOUBLE_EQ(lines[1]["samples"][0]["in_flight"].get<double>(), 3);
  EXPECT_EQ(lines[1]["variants"][0]["ready"], 1);
  EXPECT_EQ(lines[1]["replicas"][0], Replicas("chat-a100"));
  // No new demand epoch: the last decision stands, no record.
  Writers w = out_.writers();
  ASSERT_TRUE(reconciler_->Reconcile("ml/chat", w, true).ok());
  EXPECT_EQ(lines.size(), 2u);
}

// The controller's ticks are not exactly 2 s apart: at 1.99 s the KPA
// still ticks every time (it used to skip one whose gap fell short of 2 s,
// so a demand step waited a second tick), whichever reconcile the step
// lands on (after an odd or an even number of them).
TEST_F(ReconcilerTest, KnativeTicksOnEveryControllerTickDespiteJitter) {
  KnativeStepAfterJitteredTicks(5);
}
TEST_F(ReconcilerTest, KnativeTicksOnEveryControllerTickDespiteJitterEven) {
  KnativeStepAfterJitteredTicks(6);
}

TEST_F(ReconcilerTest, KnativePolicySetsReplicasTheKpaWay) {
  Pool("chat-a100", "a100-80gb", kOnDemand, 1);
  Endpoint({Variant("chat-a100", ClassName("a100-80gb", kOnDemand))},
           "Realtime", ReplicaPolicy::kKnative);
  demand_.Set([](absl::Time, int) { return InFlight(1); });
  Tick();
  const int capacity = last_->capacity_per_replica;
  ASSERT_GT(capacity, 0);
  // 3 x capacity in flight: 3 / 0.7 = 4.3 -> 5 replicas.
  const absl::Time idle_from = kT0 + absl::Minutes(3);
  demand_.Set([&](absl::Time t, int) {
    return InFlight(t < idle_from ? 3.0 * capacity : 0);
  });
  RunFor(idle_from - clock_.Now());
  EXPECT_EQ(Replicas("chat-a100"), 5);
  EXPECT_THAT(last_->variants[0].message, HasSubstr("knative baseline"));
  // Idle: down to zero, not before the stable window has emptied, and
  // within it plus the grace (and the scale-down ticks).
  std::optional<absl::Time> zero_at;
  while (!zero_at && clock_.Now() < idle_from + absl::Minutes(10)) {
    Tick();
    if (Replicas("chat-a100") == 0) {
      zero_at = clock_.Now();
    }
  }
  ASSERT_TRUE(zero_at.has_value());
  EXPECT_GE(*zero_at - idle_from, absl::Seconds(60));
  EXPECT_LE(*zero_at - idle_from, absl::Seconds(60 + 30 + 10));
  RunFor(absl::Minutes(2));
  EXPECT_EQ(Replicas("chat-a100"), 0);
  // A request held by the activator at zero: one replica in this reconcile.
  demand_.Set([](absl::Time, int) {
    policy::DemandSample s;
    s.in_flight = 0.0;
    s.queued = 1.0;
    s.arrivals = 1.0;
    return s;
  });
  Tick(absl::Milliseconds(10));
  EXPECT_EQ(Replicas("chat-a100"), 1);
}

// Engines asleep in a shared pool, seen as their GET /is_sleeping says
// (every address starts asleep); sleeps are counted. The test wakes an
// engine as the activator does, for a request.
class SleepingEngines : public EngineClient {
 public:
  std::optional<bool> IsSleeping(const std::string& a) override {
    return !awake.contains(a);
  }
  absl::Status Sleep(const std::string& a) override {
    awake.erase(a);
    ++sleeps;
    return absl::OkStatus();
  }
  std::set<std::string> awake;
  int sleeps = 0;
};

// A pool Deployment annotated pilotlight.dev/max-pool-pods is sized by the
// pool's rule (policy::PoolSizer): its pods with an engine awake plus a
// spare, up at once, down a minute or a pod's start after the busiest
// moment, at most the annotation -- its busy pods kept on a scale-down.
// Without the annotation, or with a bad one, its size is left alone.
TEST_F(ReconcilerTest, APoolThatOptsInIsSizedToItsBusyPodsAndASpare) {
  SleepingEngines fake;
  PoolEngines engines(fake);
  const std::function<void()> tick = SleepPoolEndpoint(engines);
  ASSERT_EQ(out_.Condition("SleepPool"), "True EnginesFound");
  EXPECT_THAT(out_.ConditionMessage("SleepPool"),
              ::testing::Not(HasSubstr("sizes the pool")));
  EXPECT_TRUE(std::isnan(*Gauge("pilotlight_sleep_pool_sized_pods")))
      << "not opted in: its owner sizes it";
  cluster_.AnnotateDeployment("ml/pool", kMaxPoolPodsAnnotation, "lots");
  tick();
  EXPECT_THAT(out_.ConditionMessage("SleepPool"),
              HasSubstr("its size is left as it is: "
                        "pilotlight.dev/max-pool-pods is \"lots\", not a "
                        "whole number >= 1"));
  EXPECT_TRUE(out_.patches.empty());
  cluster_.AnnotateDeployment("ml/pool", kMaxPoolPodsAnnotation, "3");
  tick();
  EXPECT_EQ(Replicas("pool"), 1);
  EXPECT_THAT(out_.ConditionMessage("SleepPool"),
              HasSubstr("Pilotlight sizes the pool to 1 pod(s): 0 busy + 1 "
                        "spare"));
  EXPECT_TRUE(out_.patches.empty());
  // A request wakes its engine (the activator does): that pod is busy, and
  // a spare is asked for at once.
  const std::vector<std::string> first = cluster_.index.PodsOf("ml/pool");
  ASSERT_EQ(first.size(), 1U);
  const std::string busy_pod =
      StringField(*cluster_.pods.Get(first[0]), {"metadata", "name"});
  fake.awake.insert(PoolEngine(first[0]));
  demand_.Set([](absl::Time, int) {
    policy::DemandSample s = InFlight(1);
    s.arrivals = 1;
    return s;
  });
  tick();
  tick();
  EXPECT_EQ(Replicas("pool"), 2);
  EXPECT_EQ(out_.status()["sleepPool"]["sizedTo"],
            json({{"pods", 2}, {"reason", "2 pod(s): 1 busy + 1 spare"}}));
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_sized_pods"), 2.0);
  EXPECT_TRUE(std::any_of(
      out_.events.begin(), out_.events.end(),
      [](const auto& ev) { return ev.reason == "SleepPoolScaledUp"; }));
  RunFor(kColdStart + 2 * kTick);
  engines.RunOnce();
  tick();
  ASSERT_EQ(cluster_.Ready("ml/pool"), 2);
  EXPECT_EQ(out_.status()["sleepPool"]["podsWithAnEngineAwake"], 1);
  // The most lowered to 1 while that pod is busy: the free pod goes.
  out_.costs.clear();
  cluster_.AnnotateDeployment("ml/pool", kMaxPoolPodsAnnotation, "1");
  tick();
  EXPECT_EQ(Replicas("pool"), 1);
  EXPECT_THAT(out_.ConditionMessage("SleepPool"),
              HasSubstr("1 pod(s): the most (2 wanted)"));
  ASSERT_EQ(out_.costs.size(), 2U);
  for (const auto& c : out_.costs) {
    EXPECT_EQ(c.cost, c.pod == busy_pod ? 1 : 0) << c.pod;
  }
  // Back to 3 at most, idle: the engine sleeps after the grace, and the
  // pool stays at what it had until the window is past, then keeps one.
  cluster_.AnnotateDeployment("ml/pool", kMaxPoolPodsAnnotation, "3");
  tick();
  EXPECT_EQ(Replicas("pool"), 2);
  demand_.Set([](absl::Time, int) { return InFlight(0); });
  const absl::Time idle_from = clock_.Now();
  while (!fake.awake.empty() && clock_.Now() < idle_from + absl::Minutes(5)) {
    tick();
  }
  ASSERT_TRUE(fake.awake.empty());
  const absl::Time asleep_at = clock_.Now();
  while (Replicas("pool") == 2 && clock_.Now() < asleep_at + absl::Minutes(5)) {
    tick();
  }
  EXPECT_EQ(Replicas("pool"), 1);
  EXPECT_GE(clock_.Now() - asleep_at, absl::Minutes(1) - 2 * kTick);
  EXPECT_LE(clock_.Now() - asleep_at, absl::Minutes(2));
}

// spec.sleepPool: its engine there is its first replica from zero. Woken
// for a request (by the activator), it is counted as the one replica asked
// for, and none of its own starts; idle past the grace, the controller puts
// it to sleep again; more load than the engine starts its own replicas,
// and the engine sleeps once one is Ready.
TEST_F(ReconcilerTest, APoolEngineIsTheFirstReplicaFromZero) {
  SleepingEngines fake;
  PoolEngines engines(fake);
  const std::function<void()> tick = SleepPoolEndpoint(engines);
  EXPECT_EQ(out_.Condition("SleepPool"), "True EnginesFound")
      << out_.status().dump();
  EXPECT_EQ(out_.status()["sleepPool"]["asleep"], 1);
  EXPECT_GT(out_.status()["sleepPool"]["wakeSeconds"].get<double>(), 0);
  EXPECT_EQ(Serving(), "engine_asleep");
  EXPECT_EQ(out_.status()["sleepPool"]["podsWithAnEngineAwake"], 0);
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_pods", "state", "free"), 1.0);
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_engines", "state", "asleep"), 1.0);
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_engines", "state", "awake"), 0.0);
  const std::vector<std::string> pool = cluster_.index.PodsOf("ml/pool");
  ASSERT_EQ(pool.size(), 1U);
  const std::string engine = PoolEngine(pool[0]);
  // A request at zero: the activator wakes the engine and sends it there;
  // none of its own starts.
  demand_.Set([](absl::Time, int) {
    policy::DemandSample s = InFlight(1);
    s.arrivals = 1;
    return s;
  });
  fake.awake.insert(engine);
  for (int i = 0; i < 3; ++i) {
    tick();
  }
  EXPECT_EQ(Replicas("chat-a100"), 0);
  EXPECT_TRUE(out_.patches.empty());
  EXPECT_EQ(out_.status()["variants"][0]["ready"], 1) << "the engine";
  EXPECT_EQ(Serving(), "engine_awake");
  EXPECT_EQ(out_.status()["sleepPool"]["pods"], 1);
  EXPECT_EQ(out_.status()["sleepPool"]["podsWithAnEngineAwake"], 1);
  EXPECT_THAT(out_.ConditionMessage("SleepPool"),
              HasSubstr("1 of its 1 pod(s) have an engine awake (every one: a "
                        "wake waits"));
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_pods", "state", "busy"), 1.0);
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_engines", "state", "awake"), 1.0);
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_engines", "state", "asleep"), 0.0);
  // Idle: back to sleep after the grace, not the keep-alive.
  demand_.Set([](absl::Time, int) { return InFlight(0); });
  const absl::Time idle_from = clock_.Now();
  while (fake.sleeps == 0 && clock_.Now() < idle_from + absl::Minutes(30)) {
    tick();
  }
  ASSERT_EQ(fake.sleeps, 1) << last_->message;
  EXPECT_LT(clock_.Now() - idle_from, absl::Minutes(2));
  EXPECT_TRUE(fake.awake.empty());
  EXPECT_TRUE(out_.patches.empty());
  // Three replicas' load: the engine is woken for the first requests, and
  // its own replicas start; once one is Ready the engine sleeps.
  demand_.Set([](absl::Time, int) {
    policy::DemandSample s = InFlight(1);
    s.arrivals = 1;
    return s;
  });
  fake.awake.insert(engine);
  tick();
  tick();
  ASSERT_EQ(fake.awake.size(), 1U);
  const int capacity = last_->capacity_per_replica;
  ASSERT_GT(capacity, 0);
  demand_.Set(
      [capacity](absl::Time, int) { return InFlight(2.5 * capacity, 20); });
  while (Replicas("chat-a100") == 0 &&
         clock_.Now() < idle_from + absl::Hours(1)) {
    tick();
  }
  ASSERT_GT(Replicas("chat-a100"), 1) << last_->message;
  EXPECT_EQ(fake.sleeps, 1) << "the engine serves while they start";
  RunFor(kColdStart + 2 * kTick);
  engines.RunOnce();
  tick();
  EXPECT_GE(Ready("chat-a100"), 1);
  EXPECT_EQ(fake.sleeps, 2);
  EXPECT_TRUE(fake.awake.empty());
  tick();
  EXPECT_EQ(Serving(), "replicas");
  // A pool with no Ready pod: its own replicas serve from zero, and the
  // condition says why.
  cluster_.SetReplicas("ml/pool", 0);
  tick();
  tick();
  EXPECT_EQ(out_.Condition("SleepPool"), "False NoPoolPods");
  EXPECT_TRUE(out_.status()["sleepPool"].is_null());
  EXPECT_EQ(Gauge("pilotlight_sleep_pool_engines", "state", "asleep"), 0.0);
}

// A request at zero whose engine stays asleep starts the endpoint's own
// replica, the SleepPool condition says why, and once that replica is Ready
// the pool is the endpoint's tier between requests again; a wake in time
// starts none.
class WakeFallbackTest : public ReconcilerTest {
 protected:
  struct Case {
    // The demand while the wake goes through (the `sample`th read), and
    // while it never does.
    std::function<policy::DemandSample(int sample)> waking;
    policy::DemandSample failing;
    bool refused;  // the wait is two wakes and the TTFT SLO, not a lead
    std::string condition;
    std::string message;
  };
  void Run(const Case& c) {
    SleepingEngines fake;
    PoolEngines engines(fake);
    const std::function<void()> tick = SleepPoolEndpoint(engines);
    ASSERT_EQ(out_.Condition("SleepPool"), "True EnginesFound");
    const double wake_s = out_.status()["sleepPool"]["wakeSeconds"];
    ASSERT_GT(wake_s, 0);
    const absl::Duration two_wakes =
        2 * absl::Seconds(wake_s) + absl::Seconds(2);
    const absl::Duration lead = last_->cold_start_lead;
    ASSERT_GT(lead, two_wakes + 4 * kTick);
    const std::vector<std::string> pool = cluster_.index.PodsOf("ml/pool");
    ASSERT_EQ(pool.size(), 1U);
    const std::string engine = PoolEngine(pool[0]);
    // The engine wakes in time: no replica of its own.
    int samples = 0;
    demand_.Set(
        [&c, &samples](absl::Time, int) { return c.waking(samples++); });
    tick();
    tick();
    fake.awake.insert(engine);
    engines.RunOnce();
    for (int i = 0; i < 5; ++i) {
      tick();
    }
    EXPECT_EQ(Replicas("chat-a100"), 0);
    EXPECT_EQ(out_.Condition("SleepPool"), "True EnginesFound");
    // Idle, the engine sleeps again; then a request whose wake never ends.
    demand_.Set([](absl::Time, int) { return InFlight(0); });
    const absl::Time idle_from = clock_.Now();
    while (!fake.awake.empty() && clock_.Now() < idle_from + absl::Minutes(5)) {
      tick();
    }
    ASSERT_TRUE(fake.awake.empty());
    demand_.Set([&c](absl::Time, int) { return c.failing; });
    const absl::Time asked = clock_.Now();
    while (Replicas("chat-a100") == 0 &&
           clock_.Now() < asked + absl::Minutes(5)) {
      tick();
    }
    ASSERT_EQ(Replicas("chat-a100"), 1) << last_->message;
    // The pool step reads the last tick's demand: a tick's lag, and the
    // ticks' own granularity.
    const absl::Duration wait = c.refused ? two_wakes : lead;
    EXPECT_GE(clock_.Now() - asked, wait);
    EXPECT_LE(clock_.Now() - asked, wait + 3 * kTick);
    EXPECT_EQ(out_.Condition("SleepPool"), c.condition);
    EXPECT_THAT(out_.ConditionMessage("SleepPool"), HasSubstr(c.message));
    EXPECT_THAT(out_.ConditionMessage("SleepPool"),
                HasSubstr("its own replicas serve from zero"));
    // Starting, not Ready: still its own replica, whatever the pool says.
    tick();
    EXPECT_EQ(Replicas("chat-a100"), 1);
    EXPECT_EQ(out_.Condition("SleepPool"), c.condition);
    RunFor(kColdStart + 2 * kTick);
    engines.RunOnce();
    tick();
    ASSERT_GE(Ready("chat-a100"), 1);
    EXPECT_EQ(Replicas("chat-a100"), 1);
    EXPECT_EQ(out_.Condition("SleepPool"), "True EnginesFound");
    EXPECT_EQ(Serving(), "replicas");
  }
};

// The activator's wake waits for GPU room on pool pods held by busy
// neighbours, or never answers: the own replica starts after a cold
// start's lead (the ski rental of the keep-alive).
TEST_F(WakeFallbackTest, AWakeThatStallsStartsTheEndpointsOwnReplica) {
  policy::DemandSample held = InFlight(0);
  held.queued = 3;
  held.arrivals = 1;
  Run({.waking =
           [](int) {
             policy::DemandSample s = InFlight(0);
             s.queued = 1;
             s.arrivals = 1;
             return s;
           },
       .failing = held,
       .refused = false,
       .condition = "False WakeStalled",
       .message = "its engine in pool has been asleep for"});
}

// The pod refuses the wake for another reason than room (the activators
// report it): after two wakes and the TTFT SLO -- what a wake through a
// neighbour's sleep takes -- not a lead, since making room cannot mend it;
// one refusal the next try mends (a neighbour that was still falling
// asleep) starts nothing.
TEST_F(WakeFallbackTest,
       AWakeRefusedStartsTheEndpointsOwnReplicaWithinTwoWakes) {
  policy::DemandSample refused = InFlight(1);
  refused.wakes_refused = 1;
  Run({.waking =
           [](int sample) {
             policy::DemandSample s = InFlight(1);
             s.arrivals = sample == 0 ? 1 : 0;
             s.wakes_refused = sample == 0 ? 1 : 0;  // the first try's
             return s;
           },
       .failing = refused,
       .refused = true,
       .condition = "False WakeRefused",
       .message = "was refused by the pod, not for want of GPU room"});
}

}  // namespace
}  // namespace pilotlight::runtime
