#include "controller/activator/targets.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/base/json_fields.h"
#include "controller/cluster/pod_facts.h"
#include "controller/http/http_server.h"
#include "httplib.h"

namespace pilotlight::activator {

using json = nlohmann::json;

PodEndpoint PodServer(const json& pod) {
  PodEndpoint pe;
  const std::string ip = StringField(pod, {"status", "podIP"});
  if (ip.empty()) {
    return pe;
  }
  int64_t port = 0;
  for (const json& c : ArrayField(pod, {"spec", "containers"})) {
    const json& ports = ArrayField(c, {"ports"});
    if (ports.empty()) {
      continue;
    }
    // The port named "http", else the container's first.
    const json* chosen = &ports[0];
    for (const json& p : ports) {
      if (StringField(p, {"name"}) == "http") {
        chosen = &p;
      }
    }
    port = IntField(*chosen, {"containerPort"});
    const std::string path =
        StringField(c, {"readinessProbe", "httpGet", "path"});
    if (!path.empty()) {
      pe.health_path = path;
    }
    break;
  }
  pe.address = absl::StrCat(ip, ":", port > 0 ? port : 8000);
  return pe;
}

std::vector<std::string> ControllerAddresses(const kube::ObjectCache& pods,
                                             const std::string& ns,
                                             const std::string& selector,
                                             int port) {
  std::vector<std::pair<std::string, std::string>> want;
  for (absl::string_view kv :
       absl::StrSplit(selector, ',', absl::SkipEmpty())) {
    const std::pair<std::string, std::string> p = absl::StrSplit(kv, '=');
    want.push_back(p);
  }
  std::vector<std::string> out;
  pods.ForEach([&](const json& pod) {
    if (StringField(pod, {"metadata", "namespace"}) != ns ||
        !cluster::PodReady(pod) || cluster::PodTerminating(pod)) {
      return;
    }
    const json& labels = Field(pod, {"metadata", "labels"});
    for (const auto& [k, v] : want) {
      if (StringField(labels, {k.c_str()}) != v) {
        return;
      }
    }
    const std::string ip = StringField(pod, {"status", "podIP"});
    if (!ip.empty()) {
      out.push_back(absl::StrCat(ip, ":", port));
    }
  });
  std::sort(out.begin(), out.end());
  return out;
}

bool Targets::HttpProbe(const std::string& address, const std::string& path,
                        absl::Duration timeout) {
  const absl::StatusOr<std::pair<std::string, int>> pod =
      SplitHostPort(address, "pod");
  if (!pod.ok()) {
    return false;
  }
  httplib::Client c(pod->first, pod->second);
  const int64_t us = absl::ToInt64Microseconds(timeout);
  c.set_connection_timeout(us / 1000000, us % 1000000);
  c.set_read_timeout(us / 1000000, us % 1000000);
  c.set_write_timeout(us / 1000000, us % 1000000);
  const httplib::Result r = c.Get(path);
  return r && r->status / 100 == 2;
}

Targets::Targets(TargetOptions options, Router& router,
                 const kube::ObjectCache& autoscalers,
                 const kube::ObjectCache& pods,
                 const cluster::ClusterIndex& index, Probe probe)
    : options_(options),
      router_(router),
      autoscalers_(autoscalers),
      pods_(pods),
      index_(index),
      probe_(std::move(probe)) {}

void Targets::Changed(const std::string& endpoint) {
  const std::lock_guard<std::mutex> lock(mu_);
  dirty_.insert(endpoint);
}

void Targets::ChangedAll() {
  const std::lock_guard<std::mutex> lock(mu_);
  all_dirty_ = true;
}

int Targets::Refresh() {
  std::set<std::string> todo;
  bool all = false;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    todo.swap(dirty_);
    all = std::exchange(all_dirty_, false);
  }
  if (all) {
    std::set<std::string> known;
    autoscalers_.ForEach(
        [&](const json& ia) { known.insert(kube::ObjectKey(ia)); });
    for (const std::string& k : known_) {
      todo.insert(k);  // deleted ones too
    }
    todo.insert(known.begin(), known.end());
  }
  // A pod that refused a connection is probed again before it is trusted.
  for (const std::pair<std::string, std::string>& removed :
       router_.TakeRemoved()) {
    const std::string& address = removed.second;
    auto it = answered_.find(removed.first);
    if (it != answered_.end()) {
      std::erase_if(it->second,
                    [&address](const auto& p) { return p.second == address; });
    }
    todo.insert(removed.first);
  }
  todo.insert(pending_.begin(), pending_.end());
  pending_.clear();
  bool known_changed = false;
  for (const std::string& key : todo) {
    const bool exists = autoscalers_.Get(key) != nullptr;
    known_changed |= exists ? known_.insert(key).second : known_.erase(key) > 0;
  }
  if (known_changed) {
    router_.SetEndpoints(known_);
  }
  // Every endpoint's pods first, then the probes of those not yet trusted
  // all at once (a pod that accepts and never answers costs one probe
  // timeout per pass, not one per such pod), then the targets.
  std::vector<Plan> plans;
  std::vector<Candidate*> to_probe;
  plans.reserve(todo.size());
  for (const std::string& key : todo) {
    plans.push_back(Collect(key));
  }
  for (Plan& plan : plans) {
    for (Candidate& c : plan.pods) {
      if (!c.answered) {
        to_probe.push_back(&c);
      }
    }
  }
  ProbeAll(to_probe);
  for (const Plan& plan : plans) {
    if (Apply(plan)) {
      pending_.insert(plan.key);
    }
  }
  return static_cast<int>(pending_.size());
}

Targets::Plan Targets::Collect(const std::string& key) {
  Plan plan;
  plan.key = key;
  const kube::ObjectCache::ObjectPtr ia = autoscalers_.Get(key);
  if (ia == nullptr) {
    plan.gone = true;
    return plan;
  }
  const std::string ns = key.substr(0, key.find('/'));
  const std::map<std::string, std::string>& before = answered_[key];
  std::vector<std::pair<std::string, int64_t>> deployments;  // 0: its own
  for (const json& v : ArrayField(*ia, {"spec", "variants"})) {
    deployments.emplace_back(StringField(v, {"deployment"}), 0);
  }
  const json& pool = Field(*ia, {"spec", "sleepPool"});
  const int64_t pool_port = IntField(pool, {"port"});
  if (!StringField(pool, {"deployment"}).empty() && pool_port > 0 &&
      pool_port <= 65535) {
    deployments.emplace_back(StringField(pool, {"deployment"}), pool_port);
  }
  for (const auto& [name, port] : deployments) {
    const std::string dep = absl::StrCat(ns, "/", name);
    for (const std::string& pk : index_.PodsOf(dep)) {
      const kube::ObjectCache::ObjectPtr pod = pods_.Get(pk);
      if (pod == nullptr || !cluster::PodReady(*pod) ||
          cluster::PodTerminating(*pod)) {
        continue;
      }
      PodEndpoint pe = PodServer(*pod);
      if (pe.address.empty()) {
        continue;
      }
      if (port > 0) {  // the endpoint's engine on a pool pod
        pe.address =
            absl::StrCat(StringField(*pod, {"status", "podIP"}), ":", port);
      }
      Candidate c;
      c.pool = port > 0;
      c.uid = StringField(*pod, {"metadata", "uid"});
      auto it = before.find(c.uid);
      c.answered = it != before.end() && it->second == pe.address;
      c.address = std::move(pe.address);
      c.health_path = std::move(pe.health_path);
      c.leaving =
          Field(*pod, {"metadata", "annotations", cluster::kLeavingAnnotation})
              .is_string();
      plan.pods.push_back(std::move(c));
    }
  }
  const int64_t cap = IntField(*ia, {"status", "concurrencyPerReplica"});
  plan.concurrency =
      cap > 0 ? static_cast<int>(cap) : options_.default_concurrency;
  return plan;
}

void Targets::ProbeAll(const std::vector<Candidate*>& todo) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < todo.size(); i = next++) {
      Candidate& c = *todo[i];
      c.answered = probe_(c.address, c.health_path, options_.probe_timeout);
    }
  };
  if (todo.size() <= 1) {
    work();  // no thread for one probe (or none)
    return;
  }
  std::vector<std::thread> threads;
  const size_t n = std::min(todo.size(), kMaxParallelProbes);
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back(work);
  }
  for (std::thread& t : threads) {
    t.join();
  }
}

bool Targets::Apply(const Plan& plan) {
  if (plan.gone) {
    answered_.erase(plan.key);
    router_.SetTargets(plan.key, {}, 1);
    const std::lock_guard<std::mutex> lock(mu_);
    count_.erase(plan.key);
    SetPoolEnginesLocked(plan.key, {});
    return false;
  }
  std::map<std::string, std::string> answered;  // this pass's, by pod uid
  std::vector<std::string> addresses;
  std::vector<std::string> leaving;
  std::vector<std::string> pool;
  std::map<std::string, std::string> engines;  // pool pod uid -> address
  bool pending = false;
  for (const Candidate& c : plan.pods) {
    if (c.pool) {
      engines[c.uid] = c.address;
    }
    if (c.answered) {
      answered[c.uid] = c.address;
      (c.pool ? pool : c.leaving ? leaving : addresses).push_back(c.address);
    } else {
      pending = true;  // Ready, model not answering yet
    }
  }
  // Better than holding: a pod of its own that is leaving, then its
  // engine in the pool (which may have to wake).
  if (addresses.empty()) {
    addresses = std::move(leaving);
  }
  if (addresses.empty()) {
    addresses = std::move(pool);
  }
  answered_[plan.key] = std::move(answered);
  router_.SetTargets(plan.key, addresses, plan.concurrency);
  const std::lock_guard<std::mutex> lock(mu_);
  count_[plan.key] = addresses.size();
  SetPoolEnginesLocked(plan.key, engines);
  return pending;
}

void Targets::SetPoolEnginesLocked(
    const std::string& endpoint,
    const std::map<std::string, std::string>& engines) {
  std::set<std::string>& pods = endpoint_pool_pods_[endpoint];
  for (const std::string& uid : pods) {
    auto pod = pool_pods_.find(uid);
    if (pod == pool_pods_.end()) {
      continue;
    }
    auto e = pod->second.find(endpoint);
    if (e != pod->second.end()) {
      engine_pod_.erase(e->second);
      pod->second.erase(e);
    }
    if (pod->second.empty()) {
      pool_pods_.erase(pod);
    }
  }
  pods.clear();
  for (const auto& [uid, address] : engines) {
    pool_pods_[uid][endpoint] = address;
    engine_pod_[address] = uid;
    pods.insert(uid);
  }
  if (pods.empty()) {
    endpoint_pool_pods_.erase(endpoint);
  }
}

std::vector<std::string> Targets::Neighbours(const std::string& address) const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto pod = engine_pod_.find(address);
  if (pod == engine_pod_.end()) {
    return out;
  }
  for (const auto& [endpoint, a] : pool_pods_.at(pod->second)) {
    if (a != address) {
      out.push_back(a);
    }
  }
  return out;
}

void Targets::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    const absl::Time next = absl::Now() + options_.probe_interval;
    Refresh();
    const absl::Duration left = next - absl::Now();
    if (left > absl::ZeroDuration()) {
      absl::SleepFor(left);
    }
  }
}

EndpointTimeouts Targets::TimeoutsOf(const std::string& endpoint) const {
  EndpointTimeouts t = options_.timeouts;
  const kube::ObjectCache::ObjectPtr ia = autoscalers_.Get(endpoint);
  if (ia == nullptr) {
    return t;
  }
  const json& lead = Field(*ia, {"status", "coldStart", "leadSeconds"});
  if (lead.is_number() && lead.get<double>() > 0) {
    t.activation =
        options_.activation.For(absl::Seconds(lead.get<double>()),
                                Field(*ia, {"spec", "sleepPool"}).is_object());
  }
  return t;
}

size_t Targets::CountOf(const std::string& endpoint) const {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = count_.find(endpoint);
  return it == count_.end() ? 0 : it->second;
}

}  // namespace pilotlight::activator
