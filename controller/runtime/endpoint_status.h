// An InferenceAutoscaler's status as a value: conditions (metav1.Condition
// semantics: lastTransitionTime moves only when the status flips) and what
// was decided. The reconciler builds one per reconcile and writes it only
// when it differs from the last one written -- compared as a whole with
// operator==, so a field added here can never be forgotten by a cache key
// (the decision's message alone is kept apart, see DecisionNote).
// ToMergePatch renders it as a JSON merge patch of .status: fields the
// value lacks are written as null, so nothing stale survives.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/decision.h"
#include "controller/sim/traffic_record.h"
#include "nlohmann/json.hpp"

namespace pilotlight::runtime {

struct Condition {
  bool status = false;
  std::string reason;
  std::string message;
  absl::Time since;  // lastTransitionTime: when `status` last changed
  bool operator==(const Condition&) const = default;
};

class Conditions {
 public:
  // Returns whether anything of the condition changed.
  bool Set(const std::string& type, bool status, const std::string& reason,
           const std::string& message, absl::Time now);
  void Remove(const std::string& type) { by_type_.erase(type); }
  const std::map<std::string, Condition>& all() const { return by_type_; }
  bool operator==(const Conditions&) const = default;

 private:
  std::map<std::string, Condition> by_type_;
};

struct VariantStatus {
  std::string deployment;
  std::string gpu_class;
  std::string capacity_type;
  int32_t desired = 0;
  int32_t ready = 0;
  bool node_free = true;
  bool operator==(const VariantStatus&) const = default;
};

// Its engines in spec.sleepPool (status.sleepPool).
struct PoolStatus {
  std::string deployment;
  int32_t awake = 0;
  int32_t asleep = 0;
  absl::Duration wake;  // the sleep model's
  int64_t asleep_cost_milli_per_hour = 0;
  // The pool Deployment's Ready pods, and of them those with an engine
  // awake (any endpoint's): the pool's GPUs taken.
  int32_t pods = 0;
  int32_t pods_with_an_engine_awake = 0;
  // With pilotlight.dev/max-pool-pods on the pool Deployment: the pods its
  // rule sizes it to, and what set that ("": not sized by Pilotlight).
  int32_t sized_pods = 0;
  std::string sized_by{};
  bool operator==(const PoolStatus&) const = default;
};

struct EndpointStatus {
  int64_t observed_generation = 0;
  Conditions conditions;
  // Set once the endpoint has been reconciled (Ready); a not-ready status
  // carries only the generation and the conditions.
  bool decided = false;
  std::vector<VariantStatus> variants;
  std::string tier;
  int32_t warm_pool = 0;
  // Concurrent sequences one replica of the serving tier takes at the TPOT
  // SLO: the activator's admission cap per pod.
  int32_t concurrency_per_replica = 0;
  int64_t keep_alive_seconds = 0;
  std::optional<absl::Time> keep_alive_until;
  int64_t cost_milli_per_hour = 0;  // rounded to 1/1000 $
  int32_t cold_start_samples = 0;
  absl::Duration cold_start_p50;
  absl::Duration cold_start_p90;
  absl::Duration cold_start_lead;
  std::string reason;  // of the last decision
  // The replay status.counterfactual shows, when it has candidates (a new
  // one is a change).
  std::optional<absl::Time> counterfactual_at;
  std::optional<PoolStatus> pool;
  bool operator==(const EndpointStatus&) const = default;
};

// The last decision's time and one-line message. Not part of the compared
// value on purpose: the message carries demand figures that move every
// tick, and rewriting 2,000 statuses a tick for them would flood the API
// server; it is written along with any change of the status.
struct DecisionNote {
  absl::Time time;
  std::string message;
  // status.economics: the numbers the decision was made with, in dollars
  // (EconomicsJson; null for a hold), read by `pilotlight explain`.
  nlohmann::json economics;
  // status.trafficHistory: how much of the endpoint's own traffic is
  // recorded (TrafficHistoryJson; null when not decided).
  nlohmann::json history;
  // status.counterfactual: the newest replay of the endpoint's recorded
  // traffic through other policies (CounterfactualJson; null: none).
  nlohmann::json counterfactual;
};

// The decision's economics as status.economics (CRD schema: the
// InferenceAutoscaler's status.economics).
nlohmann::json EconomicsJson(const policy::Decision& d);

// The traffic record as status.trafficHistory (CRD schema: the
// InferenceAutoscaler's status.trafficHistory): the unbroken history it
// holds up to its last look, its arrivals, the gaps and clock jumps that
// restarted it, and its size.
nlohmann::json TrafficHistoryJson(const sim::TrafficRecord& r);

nlohmann::json ToMergePatch(const EndpointStatus& s, const DecisionNote& note);

}  // namespace pilotlight::runtime
