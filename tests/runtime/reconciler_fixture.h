// The reconciler's timeline fixture: a FakeCluster (tests/fakes) plays
// the Deployment controller, scheduler and kubelet; FakeDemand is what
// Prometheus (or the activator) would report; RecordingWriters keeps the
// patches, statuses and Events. No API server, no sleeps: each Tick()
// settles the cluster, opens a demand epoch and reconciles once, then
// moves the fake clock.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/api/resources.h"
#include "controller/model/catalog.h"
#include "controller/runtime/pool_engines.h"
#include "controller/runtime/reconciler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/kube/fake_clock.h"

namespace pilotlight::runtime {

using fakes::json;
using ::testing::HasSubstr;

inline const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);
constexpr absl::Duration kTick = absl::Seconds(2);
constexpr absl::Duration kColdStart = absl::Seconds(20);

inline json GpuClass(const std::string& entry, policy::CapacityType c) {
  static const model::Catalog catalog = *model::Catalog::Default();
  return api::GpuClassObject(*catalog.Find(entry), c);
}

inline json Variant(const std::string& deployment,
                    const std::string& gpu_class) {
  return {{"deployment", deployment}, {"gpuClass", gpu_class}};
}

inline policy::DemandSample InFlight(double n, double arrivals = 1) {
  policy::DemandSample s;
  s.in_flight = n;
  s.queued = 0.0;
  s.arrivals = n > 0 ? arrivals : 0.0;
  return s;
}

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() : clock_(kT0), metrics_(registry_), out_(cluster_) {}

  // Endpoint ml/chat over `variants`; `mode` Realtime or Batch.
  // A vector, not a json: clang reads json{one_object} as a copy, gcc as a
  // one-element array.
  void Endpoint(std::vector<json> variants,
                const std::string& mode = "Realtime",
                ReplicaPolicy policy = ReplicaPolicy::kPilotlight) {
    json spec = {{"model", {{"preset", "llama-3.1-8b"}}},
                 {"mode", mode},
                 {"variants", std::move(variants)}};
    spec.update(extra_spec_);
    cluster_.PutAutoscaler(
        {{"metadata", {{"namespace", "ml"}, {"name", "chat"}}},
         {"spec", std::move(spec)}});
    // The pods asked for before the controller started are up.
    cluster_.Settle(clock_.Now());
    cluster_.Settle(clock_.Now() + kColdStart);
    reconciler_ = std::make_unique<Reconciler>(
        decider_config_,
        ReconcilerInputs{cluster_.autoscalers, cluster_.deployments,
                         cluster_.pods, cluster_.index, cluster_.gpu_classes,
                         demand_},
        clock_, metrics_, policy);
  }
  // A GPUClass, a pool of `gpus` GPUs on one node, and Deployment
  // ml/<name> on it.
  void Pool(const std::string& deployment, const std::string& entry,
            policy::CapacityType c, int replicas, int gpus = 8) {
    const json gc = GpuClass(entry, c);
    cluster_.PutGpuClass(gc);
    const std::map<std::string, std::string> sel = {{"pool", deployment}};
    cluster_.AddNode("node-" + deployment, sel, gpus);
    cluster_.AddDeployment("ml", deployment, replicas, sel, kColdStart);
  }
  // An endpoint of one a100 variant at zero whose engines sleep in
  // Deployment ml/pool (one pod, its engine at port 8001), seen through
  // `engines`, after two idle ticks. Returns a tick that also runs the
  // engines' pass (their own thread, once a tick).
  std::function<void()> SleepPoolEndpoint(PoolEngines& engines) {
    Pool("chat-a100", "a100-80gb", policy::CapacityType::kOnDemand, 0);
    cluster_.AddDeployment("ml", "pool", 1, {{"pool", "chat-a100"}},
                           kColdStart);
    extra_spec_ = {{"sleepPool", {{"deployment", "pool"}, {"port", 8001}}}};
    Endpoint({Variant(
        "chat-a100", ClassName("a100-80gb", policy::CapacityType::kOnDemand))});
    reconciler_->set_pool_engines(&engines);
    const auto tick = [this, &engines] {
      Tick();
      engines.RunOnce();
    };
    demand_.Set([](absl::Time, int) { return InFlight(0); });
    tick();
    tick();
    return tick;
  }
  // SleepPoolEndpoint's engine on pool pod `pod` ("ip:port").
  std::string PoolEngine(const std::string& pod) {
    return absl::StrCat(
        StringField(*cluster_.pods.Get(pod), {"status", "podIP"}), ":8001");
  }
  static std::string ClassName(const std::string& entry,
                               policy::CapacityType c) {
    return StringField(GpuClass(entry, c), {"metadata", "name"});
  }

  // One reconcile at the fake clock's now, then the clock moves by `step`.
  const policy::Decision& Tick(absl::Duration step = kTick) {
    cluster_.Settle(clock_.Now());
    demand_.NextEpoch();
    Writers w = out_.writers();
    const absl::Status st = reconciler_->Reconcile("ml/chat", w, true);
    EXPECT_TRUE(st.ok()) << st;
    last_ = reconciler_->LastDecision("ml/chat");
    clock_.Advance(step);
    return *last_;
  }
  void RunFor(absl::Duration d, absl::Duration step = kTick) {
    for (const absl::Time end = clock_.Now() + d; clock_.Now() < end;) {
      Tick(step);
    }
  }
  int Replicas(const std::string& d) { return cluster_.Replicas("ml/" + d); }
  // Knative's loop at controller ticks 1.99 s apart: half a replica's
  // capacity in flight for `before` ticks, then 4 x: one tick later the
  // KPA has panicked up.
  void KnativeStepAfterJitteredTicks(int before) {
    Pool("chat-a100", "a100-80gb", policy::CapacityType::kOnDemand, 1);
    Endpoint({Variant("chat-a100",
                      ClassName("a100-80gb", policy::CapacityType::kOnDemand))},
             "Realtime", ReplicaPolicy::kKnative);
    const absl::Duration step = absl::Milliseconds(1990);
    demand_.Set([](absl::Time, int) { return InFlight(1); });
    Tick(step);
    const int capacity = last_->capacity_per_replica;
    ASSERT_GT(capacity, 0);
    demand_.Set([&](absl::Time, int) { return InFlight(0.5 * capacity); });
    for (int i = 0; i < before; ++i) {
      Tick(step);
    }
    const int was = Replicas("chat-a100");
    demand_.Set([&](absl::Time, int) { return InFlight(4.0 * capacity); });
    Tick(step);
    EXPECT_GT(Replicas("chat-a100"), was) << last_->variants[0].message;
  }
  int Ready(const std::string& d) { return cluster_.Ready("ml/" + d); }
  // Batch over batch-od (on-demand) and batch-spot, two replicas' demand,
  // run 2 h: wholly on spot, its pods far older than the spot-health
  // window.
  void BatchOnSpotAtTwoReplicas() {
    Pool("batch-od", "a100-80gb", policy::CapacityType::kOnDemand, 0);
    Pool("batch-spot", "a100-80gb", policy::CapacityType::kSpot, 1);
    Endpoint({Variant("batch-od",
                      ClassName("a100-80gb", policy::CapacityType::kOnDemand)),
              Variant("batch-spot",
                      ClassName("a100-80gb", policy::CapacityType::kSpot))},
             "Batch");
    demand_.Set([](absl::Time, int) { return InFlight(1); });
    Tick();
    const double conc = 1.5 * last_->capacity_per_replica;  // two replicas
    demand_.Set([conc](absl::Time, int) { return InFlight(conc, 2); });
    RunFor(absl::Hours(2));
    ASSERT_EQ(Ready("batch-spot"), 2) << last_->message;
    ASSERT_EQ(Replicas("batch-od"), 0) << "batch runs wholly on spot";
  }
  bool SawEvent(const std::string& reason) const {
    for (const auto& e : out_.events) {
      if (e.reason == reason) {
        return true;
      }
    }
    return false;
  }

  // The value of the series `family`{namespace="ml",name="chat"}; nullopt
  // without one.
  std::optional<double> Gauge(const std::string& family) {
    for (const prometheus::MetricFamily& f : registry_.Collect()) {
      if (f.name != family) {
        continue;
      }
      for (const prometheus::ClientMetric& m : f.metric) {
        return m.gauge.value;
      }
    }
    return std::nullopt;
  }
  // The series of `family` whose label `key` is `value`.
  std::optional<double> Gauge(const std::string& family, const std::string& key,
                              const std::string& value) {
    for (const prometheus::MetricFamily& f : registry_.Collect()) {
      for (const prometheus::ClientMetric& m : f.metric) {
        for (const prometheus::ClientMetric::Label& l : m.label) {
          if (f.name == family && l.name == key && l.value == value) {
            return m.gauge.value;
          }
        }
      }
    }
    return std::nullopt;
  }
  // The state pilotlight_serving_state says serves ("" if none is 1).
  std::string Serving() {
    for (const char* state :
         {"replicas", "engine_awake", "engine_asleep", "zero"}) {
      if (Gauge("pilotlight_serving_state", "state", state) == 1.0) {
        return state;
      }
    }
    return "";
  }

  kube::FakeClock clock_;
  fakes::FakeCluster cluster_;
  fakes::FakeDemand demand_;
  prometheus::Registry registry_;
  Metrics metrics_;
  fakes::RecordingWriters out_;
  std::unique_ptr<Reconciler> reconciler_;
  std::optional<policy::Decision> last_;
  // The controller's flags, and more of the spec, read by Endpoint().
  policy::DeciderConfig decider_config_;
  json extra_spec_ = json::object();
};

inline const policy::CapacityType kOnDemand = policy::CapacityType::kOnDemand;
inline const policy::CapacityType kSpot = policy::CapacityType::kSpot;

}  // namespace pilotlight::runtime
