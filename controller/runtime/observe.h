// Observing one variant: its Deployment and pods become the policy's
// VariantState (desired, ready, starting, terminating, the cold starts
// learned from pod condition times, whether its pool has a free node) and
// its spot health (pods taken away, pods the pool cannot place).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/api/resources.h"
#include "controller/cluster/cluster_index.h"
#include "controller/kube/informer.h"
#include "controller/policy/snapshot.h"
#include "nlohmann/json.hpp"

namespace pilotlight::runtime {

// Cold starts of one variant, from its pods' condition times: created ->
// Ready, counted once per pod (the first time it is Ready; not after a
// container restart), the last 64 kept.
class ColdStartLearner {
 public:
  // Returns the cold start when this pod gives a new sample.
  std::optional<absl::Duration> Observe(const nlohmann::json& pod);
  // Forgets the pods not in `live_uids` (their samples stay).
  void Forget(const std::set<std::string>& live_uids);
  policy::ColdStartStats Stats() const;

 private:
  std::set<std::string> counted_;
  std::vector<absl::Duration> samples_;
};

struct LeavingPod {
  kube::ObjectCache::ObjectPtr pod;
  cluster::NodeNotice notice;
};

// The pods on nodes that announced their end (created before the notice)
// are *leaving*: the policy
// sees the variant without them (its replicas, ready and starting pods), so
// it asks for replacements at once, and the notice counts as a
// preemption for the spot-health rule. They serve until the replacements
// are Ready (leaving_pods.h).
struct VariantObservation {
  policy::VariantState state;
  std::vector<std::string> ready_pods;  // keys, not leaving
  std::optional<policy::SpotHealth> spot;
  std::vector<absl::Duration> new_cold_starts;  // learned just now
  int32_t replicas = 0;  // the Deployment's spec.replicas, leaving included
  // Leaving pods (not terminating), each with its node's notice.
  std::vector<LeavingPod> leaving;
  std::vector<std::string> leaving_ready;  // keys, for the demand join
};

// Where a pod's node announced its end (ClusterIndex::NoticeFor).
using NoticeFn =
    std::function<std::optional<cluster::NodeNotice>(const nlohmann::json&)>;

// `pods`: the Deployment's pods (null entries skipped); `free_gpus`: free
// GPUs in the variant's pool (unset: unknown, assumed free);
// `last_disruption`: when one of its pods was last taken away; `notice`:
// null for no node notices.
VariantObservation ObserveVariant(
    const api::GpuClassResource& gpu_class, const policy::VariantSpec& variant,
    const nlohmann::json& deployment,
    const std::vector<kube::ObjectCache::ObjectPtr>& pods,
    std::optional<int64_t> free_gpus, std::optional<absl::Time> last_disruption,
    const NoticeFn& notice, absl::Time now, ColdStartLearner& learner);

}  // namespace pilotlight::runtime
