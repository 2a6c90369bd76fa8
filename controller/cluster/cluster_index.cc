#include "controller/cluster/cluster_index.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"
#include "controller/cluster/pod_facts.h"

namespace pilotlight::cluster {
namespace {

using json = nlohmann::json;
using kube::EventType;

void EraseFrom(std::map<std::string, std::set<std::string>>& m,
               const std::string& key, const std::string& value) {
  auto it = m.find(key);
  if (it != m.end()) {
    it->second.erase(value);
    if (it->second.empty()) {
      m.erase(it);
    }
  }
}

}  // namespace

ClusterIndex::Keys ClusterIndex::OnAutoscaler(EventType type, const json& ia) {
  const std::string key = kube::ObjectKey(ia);
  const std::string ns = StringField(ia, {"metadata", "namespace"});
  std::set<std::string> deps;
  if (type != EventType::kDeleted) {
    for (const json& v : ArrayField(ia, {"spec", "variants"})) {
      deps.insert(absl::StrCat(ns, "/", StringField(v, {"deployment"})));
    }
    // Its engines on the pool's pods are targets too (the activator's).
    const std::string pool =
        StringField(ia, {"spec", "sleepPool", "deployment"});
    if (!pool.empty()) {
      deps.insert(absl::StrCat(ns, "/", pool));
    }
  }
  const std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& d : endpoint_deployments_[key]) {
    EraseFrom(deployment_endpoints_, d, key);
  }
  for (const std::string& d : deps) {
    deployment_endpoints_[d].insert(key);
  }
  if (deps.empty()) {
    endpoint_deployments_.erase(key);
  } else {
    endpoint_deployments_[key] = std::move(deps);
  }
  return {key};
}

ClusterIndex::Keys ClusterIndex::OnDeployment(EventType /*type*/,
                                              const json& deployment) {
  const std::lock_guard<std::mutex> lock(mu_);
  return EndpointsOfLocked(kube::ObjectKey(deployment));
}

ClusterIndex::Keys ClusterIndex::OnReplicaSet(EventType type, const json& rs) {
  const std::string key = kube::ObjectKey(rs);
  const std::string dep =
      type == EventType::kDeleted ? "" : OwnerKey(rs, "Deployment");
  const std::lock_guard<std::mutex> lock(mu_);
  Keys out;
  auto it = rs_deployment_.find(key);
  if (it != rs_deployment_.end() && it->second != dep) {
    out = EndpointsOfLocked(it->second);
    EraseFrom(deployment_rs_, it->second, key);
    rs_deployment_.erase(it);
  }
  if (!dep.empty() && rs_deployment_.emplace(key, dep).second) {
    deployment_rs_[dep].insert(key);
    const Keys more = EndpointsOfLocked(dep);
    out.insert(out.end(), more.begin(), more.end());
  }
  if (type == EventType::kDeleted) {
    rs_disrupted_.erase(key);
  }
  return out;
}

ClusterIndex::Keys ClusterIndex::OnPod(EventType type, const json& pod,
                                       absl::Time now) {
  const std::string key = kube::ObjectKey(pod);
  const bool gone = type == EventType::kDeleted;
  const std::string rs = gone ? "" : OwnerKey(pod, "ReplicaSet");
  const std::string node = StringField(pod, {"spec", "nodeName"});
  const int64_t gpus =
      gone || PodTerminal(pod) || node.empty() ? 0 : PodGpus(pod);
  const std::optional<absl::Time> disrupted =
      gone ? std::nullopt : DisruptedAt(pod, now);
  const std::lock_guard<std::mutex> lock(mu_);
  // The GPUs it holds on its node.
  auto held = pod_gpus_.find(key);
  if (held != pod_gpus_.end() &&
      (held->second.first != node || held->second.second != gpus)) {
    node_used_[held->second.first] -= held->second.second;
    pod_gpus_.erase(held);
    free_memo_.clear();
  }
  if (gpus > 0 && pod_gpus_.emplace(key, std::make_pair(node, gpus)).second) {
    node_used_[node] += gpus;
    free_memo_.clear();
  }
  // The node it is bound to.
  if (auto it = pod_node_.find(key);
      it != pod_node_.end() && (gone || it->second != node)) {
    EraseFrom(node_pods_, it->second, key);
    pod_node_.erase(it);
  }
  if (!gone && !node.empty() && pod_node_.emplace(key, node).second) {
    node_pods_[node].insert(key);
  }
  // Its ReplicaSet, and through it its Deployment.
  std::string old_rs;
  if (auto it = pod_rs_.find(key); it != pod_rs_.end()) {
    old_rs = it->second;
    if (old_rs != rs) {
      EraseFrom(rs_pods_, old_rs, key);
      pod_rs_.erase(it);
    }
  }
  if (!rs.empty()) {
    pod_rs_[key] = rs;
    rs_pods_[rs].insert(key);
    if (disrupted) {
      auto [d, added] = rs_disrupted_.try_emplace(rs, *disrupted);
      if (!added) {
        d->second = std::max(d->second, *disrupted);
      }
    }
  }
  Keys out;
  for (const std::string& r : {rs, old_rs}) {
    auto dep = rs_deployment_.find(r);
    if (!r.empty() && dep != rs_deployment_.end()) {
      const Keys k = EndpointsOfLocked(dep->second);
      out.insert(out.end(), k.begin(), k.end());
    }
  }
  return out;
}

ClusterIndex::Keys ClusterIndex::OnNode(EventType type, const json& node,
                                        absl::Time now) {
  const std::string name = kube::ObjectKey(node);
  std::vector<Taint> taints =
      type == EventType::kDeleted ? std::vector<Taint>{} : NodeTaints(node);
  const std::lock_guard<std::mutex> lock(mu_);
  free_memo_.clear();
  const auto same = [](const Taint& a, const Taint& b) {
    return a.key == b.key && a.value == b.value && a.effect == b.effect;
  };
  std::vector<Taint> before;
  if (auto it = nodes_.find(name); it != nodes_.end()) {
    before = it->second.taints;
  }
  // Each taint dated: its timeAdded, else when first seen.
  for (Taint& t : taints) {
    const auto was = std::find_if(before.begin(), before.end(),
                                  [&](const Taint& b) { return same(b, t); });
    if (!t.added) {
      t.added = was != before.end() ? was->added : now;
    }
  }
  const bool changed = !std::equal(taints.begin(), taints.end(), before.begin(),
                                   before.end(), same);
  Keys out;
  if (changed) {
    if (auto pods = node_pods_.find(name); pods != node_pods_.end()) {
      for (const std::string& p : pods->second) {
        const Keys k = EndpointsOfPodLocked(p);
        out.insert(out.end(), k.begin(), k.end());
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  if (type == EventType::kDeleted) {
    nodes_.erase(name);
    return out;
  }
  Node& n = nodes_[name];
  n.labels.clear();
  const json& labels = Field(node, {"metadata", "labels"});
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      if (v.is_string()) {
        n.labels.emplace(k, v.get<std::string>());
      }
    }
  }
  n.gpus = NodeGpus(node);
  n.taints = std::move(taints);
  return out;
}

std::optional<NodeNotice> ClusterIndex::NoticeFor(const json& pod) const {
  const std::string node = StringField(pod, {"spec", "nodeName"});
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (node.empty() || it == nodes_.end()) {
    return std::nullopt;
  }
  std::optional<NodeNotice> first;
  for (const Taint& t : it->second.taints) {
    if (TaintAnnouncesEnd(t, pod, notice_taints_) &&
        (!first || *t.added < first->at)) {
      first = NodeNotice{node, t.key, *t.added};
    }
  }
  return first;
}

std::vector<std::string> ClusterIndex::PodsOf(
    const std::string& deployment) const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto it = deployment_rs_.find(deployment);
  if (it == deployment_rs_.end()) {
    return out;
  }
  for (const std::string& rs : it->second) {
    auto pods = rs_pods_.find(rs);
    if (pods != rs_pods_.end()) {
      out.insert(out.end(), pods->second.begin(), pods->second.end());
    }
  }
  return out;
}

std::optional<absl::Time> ClusterIndex::LastDisruption(
    const std::string& deployment) const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::optional<absl::Time> last;
  auto it = deployment_rs_.find(deployment);
  if (it == deployment_rs_.end()) {
    return last;
  }
  for (const std::string& rs : it->second) {
    auto d = rs_disrupted_.find(rs);
    if (d != rs_disrupted_.end() && (!last || d->second > *last)) {
      last = d->second;
    }
  }
  return last;
}

std::optional<int64_t> ClusterIndex::FreeGpus(
    const std::map<std::string, std::string>& selector) const {
  if (selector.empty()) {
    return std::nullopt;
  }
  std::string memo_key;
  for (const auto& [k, v] : selector) {
    absl::StrAppend(&memo_key, k, "=", v, ",");
  }
  const std::lock_guard<std::mutex> lock(mu_);
  if (auto it = free_memo_.find(memo_key); it != free_memo_.end()) {
    return it->second;
  }
  int64_t free = 0;
  for (const auto& [name, n] : nodes_) {
    const bool match =
        std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
          auto l = n.labels.find(kv.first);
          return l != n.labels.end() && l->second == kv.second;
        });
    if (match) {
      auto used = node_used_.find(name);
      free += std::max<int64_t>(
          0, n.gpus - (used == node_used_.end() ? 0 : used->second));
    }
  }
  free_memo_.emplace(memo_key, free);
  return free;
}

ClusterIndex::Keys ClusterIndex::EndpointsOf(
    const std::string& deployment) const {
  const std::lock_guard<std::mutex> lock(mu_);
  return EndpointsOfLocked(deployment);
}

ClusterIndex::Keys ClusterIndex::EndpointsOfPodLocked(
    const std::string& pod) const {
  auto rs = pod_rs_.find(pod);
  if (rs == pod_rs_.end()) {
    return {};
  }
  auto dep = rs_deployment_.find(rs->second);
  return dep == rs_deployment_.end() ? Keys{} : EndpointsOfLocked(dep->second);
}

ClusterIndex::Keys ClusterIndex::EndpointsOfLocked(
    const std::string& deployment) const {
  auto it = deployment_endpoints_.find(deployment);
  if (it == deployment_endpoints_.end()) {
    return {};
  }
  return {it->second.begin(), it->second.end()};
}

}  // namespace pilotlight::cluster
