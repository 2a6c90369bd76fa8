// ClusterIndex: the joins the reconciler needs over the informer caches,
// kept up to date from their events -- which endpoints name a Deployment
// (as a variant, or as their spec.sleepPool),
// which pods a Deployment owns (pod -> ReplicaSet -> Deployment, following
// ownerReferences), when a Deployment's pods were last taken away, the
// GPUs free on the nodes a GPUClass selects, and which pods sit on a node
// that announced its end (a spot notice, a node autoscaler's disruption). Every
// On* call returns the endpoints ("namespace/name") the event concerns, for the
// work queue.
//
// Thread-safety: every method may be called from any thread (informer
// threads write, workers read).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/cluster/pod_facts.h"
#include "controller/kube/informer.h"
#include "nlohmann/json.hpp"

namespace pilotlight::cluster {

// A node's announced end, as a pod on it sees it.
struct NodeNotice {
  std::string node;
  std::string taint;  // its key
  absl::Time at;      // the taint's timeAdded, else when it was first seen
};

class ClusterIndex {
 public:
  using Keys = std::vector<std::string>;

  // `notice_taints`: the taint keys that announce a node's end whatever
  // their effect (TaintAnnouncesEnd).
  explicit ClusterIndex(
      std::vector<std::string> notice_taints = DefaultNoticeTaints())
      : notice_taints_(std::move(notice_taints)) {}

  Keys OnAutoscaler(kube::EventType type, const nlohmann::json& ia);
  Keys OnDeployment(kube::EventType type, const nlohmann::json& deployment);
  Keys OnReplicaSet(kube::EventType type, const nlohmann::json& rs);
  // `now`: when the event was seen (a disruption the pod does not date).
  Keys OnPod(kube::EventType type, const nlohmann::json& pod, absl::Time now);
  // Returns the endpoints with pods on the node when its taints changed.
  Keys OnNode(kube::EventType type, const nlohmann::json& node, absl::Time now);

  // The pods (keys) of Deployment "ns/name", through its ReplicaSets.
  std::vector<std::string> PodsOf(const std::string& deployment) const;
  // When one of the Deployment's pods was last taken away.
  std::optional<absl::Time> LastDisruption(const std::string& deployment) const;
  // GPUs free on the Ready, schedulable nodes whose labels include every
  // pair of `selector`: allocatable minus what the pods bound there ask
  // for. Unset for an empty selector (the pool is unknown).
  std::optional<int64_t> FreeGpus(
      const std::map<std::string, std::string>& selector) const;
  // Endpoints that name Deployment "ns/name".
  Keys EndpointsOf(const std::string& deployment) const;
  // The end `pod`'s node announced (the earliest such taint), if any.
  std::optional<NodeNotice> NoticeFor(const nlohmann::json& pod) const;

 private:
  struct Node {
    std::map<std::string, std::string> labels;
    int64_t gpus = 0;
    std::vector<Taint> taints;  // `added` filled in: when first seen
  };
  Keys EndpointsOfLocked(const std::string& deployment) const;
  Keys EndpointsOfPodLocked(const std::string& pod) const;

  const std::vector<std::string> notice_taints_;

  mutable std::mutex mu_;
  std::map<std::string, std::set<std::string>> deployment_endpoints_;
  std::map<std::string, std::set<std::string>> endpoint_deployments_;
  std::map<std::string, std::string> rs_deployment_;  // from ownerReferences
  std::map<std::string, std::set<std::string>> deployment_rs_;
  std::map<std::string, std::set<std::string>> rs_pods_;
  std::map<std::string, std::string> pod_rs_;
  std::map<std::string, absl::Time> rs_disrupted_;  // last pod taken
  std::map<std::string, Node> nodes_;
  std::map<std::string, std::pair<std::string, int64_t>> pod_gpus_;  // node
  std::map<std::string, int64_t> node_used_;
  std::map<std::string, std::string> pod_node_;  // bound pods
  std::map<std::string, std::set<std::string>> node_pods_;
  // FreeGpus answers, until a node or a GPU pod changes.
  mutable std::map<std::string, std::optional<int64_t>> free_memo_;
};

}  // namespace pilotlight::cluster
