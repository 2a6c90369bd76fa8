// FakeCluster: the reconciler's world without an API server, for timeline
// tests with explicit times. It holds the objects the informers would
// (InferenceAutoscalers, GPUClasses, Deployments, ReplicaSets, Pods, Nodes)
// and feeds every change through the same cluster::ClusterIndex the
// controller uses. Settle(now) plays the Deployment controller, the
// scheduler and the kubelet: each Deployment gets one ReplicaSet, as many
// pods as spec.replicas (extra not-ready pods go first), a pod binds to a
// node of its pool with a free GPU (else stays Unschedulable) and turns
// Ready one cold start after it was created.
//
// FakeDemand hands the reconciler the demand a test sets; RecordingWriters
// records patches (and applies them to the Deployment), statuses and
// Events.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/base/json_fields.h"
#include "controller/cluster/cluster_index.h"
#include "controller/cluster/pod_facts.h"
#include "controller/kube/informer.h"
#include "controller/runtime/demand_source.h"
#include "controller/runtime/disruption_guard.h"
#include "controller/runtime/gpu_class_cache.h"
#include "controller/runtime/writers.h"
#include "nlohmann/json.hpp"

namespace pilotlight::fakes {

using json = nlohmann::json;

class MemoryCache final : public kube::ObjectCache {
 public:
  ObjectPtr Get(const std::string& key) const override {
    auto it = objects_.find(key);
    return it == objects_.end() ? nullptr : it->second;
  }
  void ForEach(const std::function<void(const json&)>& f) const override {
    for (const auto& [k, o] : objects_) {
      f(*o);
    }
  }
  // Returns the event type the change is.
  kube::EventType Put(json o) {
    const std::string key = kube::ObjectKey(o);
    const bool known = objects_.count(key) != 0;
    objects_[key] = std::make_shared<const json>(std::move(o));
    return known ? kube::EventType::kModified : kube::EventType::kAdded;
  }
  ObjectPtr Erase(const std::string& key) {
    ObjectPtr o = Get(key);
    objects_.erase(key);
    return o;
  }

 private:
  std::map<std::string, ObjectPtr> objects_;
};

class FakeCluster {
 public:
  FakeCluster() : gpu_classes(gpu_class_objects) {}

  void PutAutoscaler(json ia) {
    json& meta = ia["metadata"];
    if (!meta.contains("generation")) {
      meta["generation"] = 1;
    }
    meta["resourceVersion"] = std::to_string(++version_);
    meta["uid"] = absl::StrCat("uid-", kube::ObjectKey(ia));
    const kube::EventType t = autoscalers.Put(ia);
    index.OnAutoscaler(t, ia);
  }
  void PutGpuClass(json c) {
    gpu_class_objects.Put(std::move(c));
    gpu_classes.Changed();
  }
  // A node of `gpus` GPUs with these labels, Ready.
  void AddNode(const std::string& name,
               const std::map<std::string, std::string>& labels, int gpus) {
    json n = {{"metadata", {{"name", name}, {"labels", labels}}},
              {"status",
               {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                {"conditions",
                 {{{"type", "Ready"},
                   {"status", "True"},
                   {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}}};
    index.OnNode(nodes.Put(n), n, absl::UnixEpoch());
  }
  // A Deployment whose pods need `selector` and one GPU, and start in
  // `cold_start`.
  void AddDeployment(const std::string& ns, const std::string& name,
                     int replicas,
                     const std::map<std::string, std::string>& selector,
                     absl::Duration cold_start) {
    json d = {{"metadata", {{"namespace", ns}, {"name", name}}},
              {"spec",
               {{"replicas", replicas},
                {"template", {{"spec", {{"nodeSelector", selector}}}}}}}};
    cold_start_[absl::StrCat(ns, "/", name)] = cold_start;
    index.OnDeployment(deployments.Put(d), d);
  }
  void SetReplicas(const std::string& key, int replicas) {
    json d = *deployments.Get(key);
    d["spec"]["replicas"] = replicas;
    index.OnDeployment(deployments.Put(d), d);
  }
  // Sets an annotation on Deployment `key` ("ns/name").
  void AnnotateDeployment(const std::string& key, const std::string& name,
                          const std::string& value) {
    json d = *deployments.Get(key);
    d["metadata"]["annotations"][name] = value;
    index.OnDeployment(deployments.Put(d), d);
  }
  // Sets an annotation on pod `key` ("ns/name"), if it is there.
  void AnnotatePod(const std::string& key, const std::string& name,
                   const std::string& value, absl::Time now) {
    const kube::ObjectCache::ObjectPtr p = pods.Get(key);
    if (p == nullptr) {
      return;
    }
    json pod = *p;
    pod["metadata"]["annotations"][name] = value;
    index.OnPod(pods.Put(pod), pod, now);
  }

  // Adds a taint to node `name` (the cloud's or the node autoscaler's
  // notice that it goes).
  void TaintNode(const std::string& name, const std::string& key,
                 const std::string& effect, absl::Time now) {
    json n = *nodes.Get(name);
    n["spec"]["taints"].push_back({{"key", key}, {"effect", effect}});
    notified_ = index.OnNode(nodes.Put(n), n, now);
  }
  // The endpoints the last TaintNode concerned (the work queue's keys).
  const std::vector<std::string>& notified() const { return notified_; }
  // Node `name` is gone at `now`: its pods fail (NodeShutdown) and are
  // deleted.
  void RemoveNode(const std::string& name, absl::Time now) {
    std::vector<std::string> on;
    pods.ForEach([&](const json& p) {
      if (StringField(p, {"spec", "nodeName"}) == name) {
        on.push_back(kube::ObjectKey(p));
      }
    });
    for (const std::string& p : on) {
      json pod = *pods.Get(p);
      pod["status"]["phase"] = "Failed";
      pod["status"]["reason"] = "NodeShutdown";
      index.OnPod(pods.Put(pod), pod, now);
      DeletePod(p, now);
    }
    if (kube::ObjectCache::ObjectPtr n = nodes.Erase(name)) {
      index.OnNode(kube::EventType::kDeleted, *n, now);
    }
  }

  int Replicas(const std::string& key) const {
    return static_cast<int>(
        IntField(*deployments.Get(key), {"spec", "replicas"}));
  }
  int Ready(const std::string& deployment) const {
    int n = 0;
    for (const std::string& p : index.PodsOf(deployment)) {
      n += cluster::PodReady(*pods.Get(p)) ? 1 : 0;
    }
    return n;
  }
  // The cluster takes `n` ready pods of `deployment` away at `now`
  // (a spot reclaim): they fail with reason Evicted and are deleted.
  void Preempt(const std::string& deployment, int n, absl::Time now) {
    for (const std::string& p : index.PodsOf(deployment)) {
      if (n-- <= 0) {
        break;
      }
      json pod = *pods.Get(p);
      pod["status"]["phase"] = "Failed";
      pod["status"]["reason"] = "Evicted";
      pod["status"]["conditions"] = {
          {{"type", "Ready"},
           {"status", "False"},
           {"lastTransitionTime", FormatRfc3339(now)}}};
      index.OnPod(pods.Put(pod), pod, now);
      DeletePod(p, now);
    }
  }

  void Settle(absl::Time now) {
    std::vector<std::string> keys;
    deployments.ForEach(
        [&](const json& d) { keys.push_back(kube::ObjectKey(d)); });
    for (const std::string& k : keys) {
      SettleDeployment(k, now);
    }
  }

  MemoryCache autoscalers;
  MemoryCache gpu_class_objects;
  MemoryCache deployments;
  MemoryCache replicasets;
  MemoryCache pods;
  MemoryCache nodes;
  cluster::ClusterIndex index;
  runtime::GpuClassCache gpu_classes;

 private:
  void DeletePod(const std::string& key, absl::Time now) {
    if (kube::ObjectCache::ObjectPtr p = pods.Erase(key)) {
      index.OnPod(kube::EventType::kDeleted, *p, now);
    }
    ready_at_.erase(key);
  }

  // GPUs free on `node` (allocatable minus bound, non-terminal pods).
  int FreeOn(const json& node) const {
    int used = 0;
    pods.ForEach([&](const json& p) {
      if (StringField(p, {"spec", "nodeName"}) == kube::ObjectKey(node) &&
          !cluster::PodTerminal(p)) {
        used += static_cast<int>(cluster::PodGpus(p));
      }
    });
    return static_cast<int>(cluster::NodeGpus(node)) - used;
  }

  std::string Schedule(const json& deployment) const {
    const std::map<std::string, std::string> want =
        cluster::PoolSelector(deployment, {});
    std::string found;
    nodes.ForEach([&](const json& n) {
      bool match = found.empty();
      for (const auto& [k, v] : want) {
        match = match && StringField(n, {"metadata", "labels", k.c_str()}) == v;
      }
      for (const cluster::Taint& t : cluster::NodeTaints(n)) {
        match = match && t.effect != "NoSchedule" && t.effect != "NoExecute";
      }
      if (match && FreeOn(n) >= 1) {
        found = kube::ObjectKey(n);
      }
    });
    return found;
  }

  void SettleDeployment(const std::string& key, absl::Time now) {
    const json d = *deployments.Get(key);
    const std::string ns = StringField(d, {"metadata", "namespace"});
    const std::string name = StringField(d, {"metadata", "name"});
    // Named unlike <deployment>-<hash>: only ownerReferences tie it.
    const std::string rs_name = absl::StrCat("rs-", name);
    if (replicasets.Get(absl::StrCat(ns, "/", rs_name)) == nullptr) {
      json rs = {{"metadata",
                  {{"namespace", ns},
                   {"name", rs_name},
                   {"ownerReferences",
                    {{{"kind", "Deployment"},
                      {"name", name},
                      {"controller", true}}}}}}};
      index.OnReplicaSet(replicasets.Put(rs), rs);
    }
    std::vector<std::string> live;
    for (const std::string& p : index.PodsOf(key)) {
      if (!cluster::PodTerminal(*pods.Get(p))) {
        live.push_back(p);
      }
    }
    const int want = static_cast<int>(IntField(d, {"spec", "replicas"}));
    // Scale down as a ReplicaSet ranks its pods: not-ready pods first,
    // then the lower controller.kubernetes.io/pod-deletion-cost, then the
    // newest.
    const auto cost = [&](const std::string& p) {
      int64_t c = 0;
      (void)absl::SimpleAtoi(
          StringField(*pods.Get(p),
                      {"metadata", "annotations", runtime::kPodDeletionCost}),
          &c);
      return c;
    };
    std::stable_sort(live.begin(), live.end(),
                     [&](const auto& a, const auto& b) {
                       const bool ra = cluster::PodReady(*pods.Get(a));
                       const bool rb = cluster::PodReady(*pods.Get(b));
                       return ra != rb ? ra > rb : cost(a) > cost(b);
                     });
    while (static_cast<int>(live.size()) > want) {
      DeletePod(live.back(), now);
      live.pop_back();
    }
    for (int i = static_cast<int>(live.size()); i < want; ++i) {
      const std::string pod_name = absl::StrCat(rs_name, "-", ++serial_);
      json pod = {
          {"metadata",
           {{"namespace", ns},
            {"name", pod_name},
            {"uid", absl::StrCat("pod-uid-", serial_)},
            {"creationTimestamp", FormatRfc3339(now)},
            {"ownerReferences",
             {{{"kind", "ReplicaSet"},
               {"name", rs_name},
               {"controller", true}}}}}},
          {"spec",
           {{"containers",
             {{{"name", "server"},
               {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}}}}},
          {"status",
           {{"phase", "Pending"},
            {"podIP",
             absl::StrCat("10.0.", serial_ / 256, ".", serial_ % 256)}}}};
      live.push_back(absl::StrCat(ns, "/", pod_name));
      index.OnPod(pods.Put(pod), pod, now);
    }
    for (const std::string& p : live) {
      SettlePod(p, d, now);
    }
  }

  // Binds a pending pod (or marks it Unschedulable); Ready one cold start
  // after it was bound.
  void SettlePod(const std::string& key, const json& d, absl::Time now) {
    json pod = *pods.Get(key);
    if (cluster::PodReady(pod)) {
      return;
    }
    if (StringField(pod, {"spec", "nodeName"}).empty()) {
      const std::string node = Schedule(d);
      if (node.empty()) {
        pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                        {"status", "False"},
                                        {"reason", "Unschedulable"}}};
        index.OnPod(pods.Put(pod), pod, now);
        return;
      }
      pod["spec"]["nodeName"] = node;
      pod["status"]["conditions"] = json::array();
      ready_at_[key] = now + cold_start_[kube::ObjectKey(d)];
      index.OnPod(pods.Put(pod), pod, now);
    }
    auto at = ready_at_.find(key);
    if (at != ready_at_.end() && now >= at->second) {
      pod["status"]["phase"] = "Running";
      pod["status"]["conditions"] = {
          {{"type", "Ready"},
           {"status", "True"},
           {"lastTransitionTime", FormatRfc3339(at->second)}}};
      index.OnPod(pods.Put(pod), pod, now);
    }
  }

  int64_t version_ = 0;
  int64_t serial_ = 0;
  std::vector<std::string> notified_;
  std::map<std::string, absl::Duration> cold_start_;
  std::map<std::string, absl::Time> ready_at_;
};

// The demand a test sets, per endpoint: a function of the time and of the
// endpoint's ready pods (e.g. nothing reaches a model server at zero).
class FakeDemand final : public runtime::DemandSource {
 public:
  using Fn = std::function<policy::DemandSample(absl::Time, int ready)>;
  void Set(Fn fn) { fn_ = std::move(fn); }
  // A metric that cannot be read (Prometheus down), or back.
  void SetMissing(std::string what) { missing_ = std::move(what); }
  void NextEpoch() { ++epoch_; }
  // Requests per pod ("ns/name") for BusyPods.
  void SetBusy(std::map<std::string, double> busy) { busy_ = std::move(busy); }
  std::map<std::string, double> BusyPods(
      const api::AutoscalerResource&,
      const std::vector<std::string>& pods) const override {
    std::map<std::string, double> out;
    for (const std::string& p : pods) {
      if (const auto it = busy_.find(p); it != busy_.end()) {
        out.emplace(p, it->second);
      }
    }
    return out;
  }

  int64_t Epoch(const std::string& /*endpoint*/) const override {
    return epoch_;
  }
  void Forget(const std::string& endpoint) override {
    forgotten_.push_back(endpoint);
  }
  // Endpoints the reconciler said were deleted, in order.
  const std::vector<std::string>& forgotten() const { return forgotten_; }
  policy::DemandSample Read(const api::AutoscalerResource&,
                            const std::vector<std::string>& ready_pods,
                            absl::Time now, std::string& missing) override {
    if (!missing_.empty()) {
      missing = missing_;
      policy::DemandSample s;
      s.at = now;
      return s;
    }
    policy::DemandSample s = fn_ ? fn_(now, static_cast<int>(ready_pods.size()))
                                 : policy::DemandSample{};
    s.at = now;
    return s;
  }

 private:
  Fn fn_;
  std::string missing_;
  int64_t epoch_ = 0;
  std::map<std::string, double> busy_;
  std::vector<std::string> forgotten_;
};

// Records what the reconciler writes; /scale patches go to the cluster.
class RecordingWriters final : public runtime::ReplicaPatcher,
                               public runtime::StatusWriter,
                               public runtime::EventRecorder {
 public:
  struct Patch {
    std::string deployment;
    int replicas;
  };
  struct Event {
    std::string type;
    std::string reason;
    std::string message;
  };
  struct Cost {
    std::string pod;
    int32_t cost;
    int before_patch;  // how many /scale patches came before it
  };
  explicit RecordingWriters(FakeCluster& cluster) : cluster_(cluster) {}

  absl::Status Scale(const std::string& ns, const std::string& deployment,
                     int32_t replicas) override {
    patches.push_back({deployment, replicas});
    cluster_.SetReplicas(absl::StrCat(ns, "/", deployment), replicas);
    return absl::OkStatus();
  }
  absl::Status SetDeletionCost(const std::string& ns, const std::string& pod,
                               int32_t cost) override {
    costs.push_back({pod, cost, static_cast<int>(patches.size())});
    cluster_.AnnotatePod(absl::StrCat(ns, "/", pod), runtime::kPodDeletionCost,
                         absl::StrCat(cost), absl::InfinitePast());
    return absl::OkStatus();
  }
  absl::Status GuardFromDisruption(const std::string& ns,
                                   const std::string& pod,
                                   bool guard) override {
    guards.push_back({pod, guard});
    const std::string key = absl::StrCat(ns, "/", pod);
    cluster_.AnnotatePod(key, runtime::kDoNotDisrupt, guard ? "true" : "",
                         absl::InfinitePast());
    cluster_.AnnotatePod(key, runtime::kSafeToEvict, guard ? "false" : "",
                         absl::InfinitePast());
    cluster_.AnnotatePod(key, runtime::kDisruptionGuard, guard ? "true" : "",
                         absl::InfinitePast());
    return absl::OkStatus();
  }
  absl::Status MarkLeaving(const std::string& ns, const std::string& pod,
                           const std::string& note) override {
    leaving.push_back(pod);
    const std::string key = absl::StrCat(ns, "/", pod);
    cluster_.AnnotatePod(key, runtime::kLeaving, note, absl::InfinitePast());
    cluster_.AnnotatePod(key, runtime::kPodDeletionCost,
                         absl::StrCat(runtime::kLeavingDeletionCost),
                         absl::InfinitePast());
    return absl::OkStatus();
  }
  absl::Status PatchStatus(const std::string&, const std::string&,
                           const json& status) override {
    ++status_writes;
    status_.merge_patch(status);
    return absl::OkStatus();
  }
  void Record(const runtime::EventSubject&, const std::string& type,
              const std::string& reason, const std::string& message) override {
    events.push_back({type, reason, message});
  }
  runtime::Writers writers() { return {*this, *this, *this}; }
  // The status as the API server holds it after the merge patches.
  json status() const { return status_; }
  // The condition of `type` ("True"/"False" + reason), or "".
  std::string Condition(const std::string& type) const {
    for (const json& c : ArrayField(status_, {"conditions"})) {
      if (StringField(c, {"type"}) == type) {
        return absl::StrCat(StringField(c, {"status"}), " ",
                            StringField(c, {"reason"}));
      }
    }
    return "";
  }
  // Its message, or "".
  std::string ConditionMessage(const std::string& type) const {
    for (const json& c : ArrayField(status_, {"conditions"})) {
      if (StringField(c, {"type"}) == type) {
        return StringField(c, {"message"});
      }
    }
    return "";
  }

  std::vector<Patch> patches;
  std::vector<Cost> costs;
  struct Guard {
    std::string pod;
    bool guard;
  };
  std::vector<Guard> guards;         // GuardFromDisruption calls, in order
  std::vector<std::string> leaving;  // MarkLeaving calls' pods, in order
  std::vector<Event> events;
  int status_writes = 0;

 private:
  FakeCluster& cluster_;
  json status_ = json::object();
};

}  // namespace pilotlight::fakes
