#include "controller/runtime/observe.h"

#include <algorithm>

#include "controller/base/json_fields.h"
#include "controller/cluster/pod_facts.h"

namespace pilotlight::runtime {
namespace {

using json = nlohmann::json;

constexpr size_t kColdStartSamples = 64;

// The notice of `pod`'s node, if it came after the pod: a pod placed on
// a node after its notice (a toleration, a PreferNoSchedule taint) is a
// replacement already -- replacing it again would never end.
// creationTimestamp has whole seconds: a pod created in the notice's second
// counts as after it.
std::optional<cluster::NodeNotice> LeavingNotice(const json& pod,
                                                 const NoticeFn& notice) {
  std::optional<cluster::NodeNotice> n = notice ? notice(pod) : std::nullopt;
  const std::optional<absl::Time> created =
      ParseTime(Field(pod, {"metadata", "creationTimestamp"}));
  if (n && created && *created + absl::Seconds(1) > n->at) {
    return std::nullopt;
  }
  return n;
}

}  // namespace

std::optional<absl::Duration> ColdStartLearner::Observe(const json& pod) {
  const std::string uid = StringField(pod, {"metadata", "uid"});
  if (uid.empty() || counted_.count(uid) != 0) {
    return std::nullopt;
  }
  const std::optional<absl::Time> ready = cluster::ConditionTime(pod, "Ready");
  const std::optional<absl::Time> created =
      ParseTime(Field(pod, {"metadata", "creationTimestamp"}));
  if (!ready || !created || *ready < *created) {
    return std::nullopt;
  }
  const json& cs = ArrayField(pod, {"status", "containerStatuses"});
  if (!cs.empty() && IntField(cs[0], {"restartCount"}) > 0) {
    return std::nullopt;  // a restart, not a cold start
  }
  counted_.insert(uid);
  samples_.push_back(*ready - *created);
  if (samples_.size() > kColdStartSamples) {
    samples_.erase(samples_.begin());
  }
  return *ready - *created;
}

void ColdStartLearner::Forget(const std::set<std::string>& live_uids) {
  for (auto it = counted_.begin(); it != counted_.end();) {
    it = live_uids.count(*it) == 0 ? counted_.erase(it) : std::next(it);
  }
}

policy::ColdStartStats ColdStartLearner::Stats() const {
  policy::ColdStartStats s;
  s.samples = static_cast<int32_t>(samples_.size());
  if (samples_.empty()) {
    return s;
  }
  std::vector<absl::Duration> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) {
    return sorted[std::min(
        sorted.size() - 1,
        static_cast<size_t>(q * static_cast<double>(sorted.size())))];
  };
  s.p50 = at(0.5);
  s.p90 = at(0.9);
  return s;
}

VariantObservation ObserveVariant(
    const api::GpuClassResource& gpu_class, const policy::VariantSpec& variant,
    const json& deployment,
    const std::vector<kube::ObjectCache::ObjectPtr>& pods,
    std::optional<int64_t> free_gpus, std::optional<absl::Time> last_disruption,
    const NoticeFn& notice, absl::Time now, ColdStartLearner& learner) {
  VariantObservation o;
  policy::VariantState& vs = o.state;
  o.replicas = static_cast<int32_t>(IntField(deployment, {"spec", "replicas"}));
  std::set<std::string> live;
  bool unschedulable = false;
  std::optional<absl::Time> first_notice;  // of its leaving pods, earliest
  for (const kube::ObjectCache::ObjectPtr& p : pods) {
    if (p == nullptr || cluster::PodTerminal(*p)) {
      continue;
    }
    live.insert(StringField(*p, {"metadata", "uid"}));
    if (cluster::PodTerminating(*p)) {
      ++vs.terminating;
      continue;
    }
    if (std::optional<absl::Duration> cold = learner.Observe(*p)) {
      o.new_cold_starts.push_back(*cold);
    }
    if (std::optional<cluster::NodeNotice> n = LeavingNotice(*p, notice)) {
      if (cluster::PodReady(*p)) {
        o.leaving_ready.push_back(kube::ObjectKey(*p));
      }
      if (!first_notice || n->at < *first_notice) {
        first_notice = n->at;
      }
      o.leaving.push_back({p, *std::move(n)});
      continue;
    }
    unschedulable = unschedulable || cluster::PodUnschedulable(*p);
    if (cluster::PodReady(*p)) {
      ++vs.ready;
      o.ready_pods.push_back(kube::ObjectKey(*p));
    } else if (auto created =
                   ParseTime(Field(*p, {"metadata", "creationTimestamp"}))) {
      vs.starting.push_back(*created);
    }
  }
  learner.Forget(live);
  vs.desired =
      std::max<int32_t>(0, o.replicas - static_cast<int32_t>(o.leaving.size()));
  if (first_notice && (!last_disruption || *first_notice > *last_disruption)) {
    last_disruption = first_notice;  // a notice is a preemption
  }
  vs.cold_start = learner.Stats();
  // One more replica needs a node started when the scheduler already cannot
  // place one, or the pool's nodes lack the GPUs for it.
  vs.node_free =
      !unschedulable && (!free_gpus || *free_gpus >= variant.gpus_per_replica);
  if (variant.capacity == policy::CapacityType::kSpot &&
      (last_disruption || unschedulable)) {
    policy::SpotHealth h;
    h.gpu_class = gpu_class.gpu.name;
    h.last_preemption = last_disruption;
    if (unschedulable) {
      h.last_failed_placement = now;  // failing to place as we speak
    }
    o.spot = std::move(h);
  }
  return o;
}

}  // namespace pilotlight::runtime
