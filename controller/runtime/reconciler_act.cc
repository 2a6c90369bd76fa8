#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"
#include "controller/base/status_macros.h"
#include "controller/process/log.h"
#include "controller/runtime/leaving_pods.h"
#include "controller/runtime/pool_engines.h"
#include "controller/runtime/pool_sizing.h"
#include "controller/runtime/reconciler.h"
#include "controller/runtime/reconciler_state.h"

namespace pilotlight::runtime {

// Knative's loop on the same demand: one tick every 2 s (Knative's
// default tick), and at once when a request waits at zero (the
// activator's poke, as the simulator's knative baseline is asked). It sets
// the first variant's replicas; the rest of the decision is the decider's.
// The ticks keep a 2 s grid and fall due a little early: the controller's
// own ticks arrive 1.98-2.01 s apart, and "2 s since the last tick" skipped
// one in ten of them, so the KPA live ticked every 4 s at times (61 scale
// events in a 20-minute replay against 80 simulated).
const policy::Decision& Reconciler::Knative(Endpoint& e, const Observed& o,
                                            absl::Time now) {
  const policy::Decision& d = *e.decision;
  if (!d.valid || d.variants.empty() || o.snap.variants.empty()) {
    return d;
  }
  const int slots = e.parsed->spec.concurrency_per_replica > 0
                        ? e.parsed->spec.concurrency_per_replica
                        : std::max(1, d.capacity_per_replica);
  if (!e.knative) {
    // The endpoint's bounds as the revision's min-scale and max-scale.
    e.knative.emplace(slots,
                      policy::KnativeAutoscaler::kDefaultTargetUtilization,
                      e.parsed->spec.min_replicas, e.parsed->spec.max_replicas);
  }
  const policy::VariantState& v = o.snap.variants[0];
  const double queued = e.last_sample.queued.value_or(0);
  const bool poke = v.desired == 0 && queued > 0;
  constexpr absl::Duration kKpaTick = absl::Seconds(2);
  constexpr absl::Duration kEarly = absl::Milliseconds(250);
  const bool due = !e.knative_decision || now + kEarly >= e.knative_due;
  if (due || poke) {
    if (due) {
      e.knative_due = std::max(e.knative_due, now - kEarly) + kKpaTick;
    }
    const int replicas = e.knative->Tick(
        now, e.last_sample.in_flight.value_or(0), queued, v.ready, v.desired);
    e.knative_decision = d;
    for (size_t i = 0; i < e.knative_decision->variants.size(); ++i) {
      policy::VariantDecision& out = e.knative_decision->variants[i];
      out.replicas = i == 0 ? replicas : 0;
      out.message = "knative baseline (KPA, target 70 %)";
    }
  }
  return *e.knative_decision;
}

// Before a scale-down: each ready pod's deletion cost is the requests on it
// (running + waiting, as Prometheus last read them), so the ReplicaSet
// removes the idle pods first and a busy pod's streams are not cut short
// by its grace period. Only costs that changed are written. Best effort: a
// pod that could not be annotated (gone meanwhile, no RBAC) is logged, and
// the scale-down goes on.
void Reconciler::SpareBusyPods(const Endpoint& e,
                               const std::vector<std::string>& pods,
                               Writers& w) {
  for (const auto& [key, requests] : in_.demand.BusyPods(*e.parsed, pods)) {
    const kube::ObjectCache::ObjectPtr pod = in_.pods.Get(key);
    if (!pod || !std::isfinite(requests)) {
      continue;
    }
    const auto cost =
        static_cast<int32_t>(std::clamp(std::round(requests), 0.0, 1e9));
    if (StringField(*pod, {"metadata", "annotations", kPodDeletionCost}) ==
        absl::StrCat(cost)) {
      continue;
    }
    const std::string name = StringField(*pod, {"metadata", "name"});
    if (absl::Status st = w.patcher.SetDeletionCost(e.subject.ns, name, cost);
        !st.ok()) {
      process::LogJson(
          "warn", "pod deletion cost not set",
          {{"pod", key}, {"cost", cost}, {"error", st.ToString()}});
    }
  }
}

// Stage 4 (the leader only): patch the variants whose replicas differ.
absl::Status Reconciler::Act(const Endpoint& e, const policy::Decision& d,
                             const Observed& o, Writers& w,
                             std::string& scaled) {
  std::vector<int32_t> decided;
  std::vector<int32_t> ready;
  for (size_t i = 0; i < d.variants.size(); ++i) {
    decided.push_back(d.variants[i].replicas);
    ready.push_back(o.snap.variants[i].ready);
  }
  std::vector<int32_t> to = policy::ReplicasWithLeaving(
      decided, ready, o.leaving, d.load_replicas + d.warm_pool);
  if (o.pool && pool_engines_ != nullptr) {
    // Its engines in the pool first, from zero (pool_engines.h); the
    // engine client acts off this thread and logs what it did.
    const PoolPlan plan =
        PlanPool(to, o.replicas, o.own_ready, o.pool_awake, o.pool_asleep);
    to = plan.own;
    for (const std::string& a : plan.sleep) {
      pool_engines_->Sleep(a);
    }
  }
  for (size_t i = 0; i < d.variants.size(); ++i) {
    const policy::VariantDecision& v = d.variants[i];
    const int32_t from = o.replicas[i];
    if (to[i] == from) {
      continue;
    }
    if (to[i] > 0 && to[i] < from) {
      SpareBusyPods(e, o.variant_pods[i], w);
    }
    // A failed patch is retried with back-off; nothing after it was done.
    PL_RETURN_IF_ERROR(w.patcher.Scale(e.subject.ns, v.deployment, to[i]));
    const std::string why = absl::StrCat(
        v.message, to[i] > v.replicas ? absl::StrCat("; ", o.leaving[i],
                                                     " leaving until replaced")
                                      : "");
    const std::string msg =
        absl::StrCat(v.deployment, ": ", from, " -> ", to[i], " (", why, ")");
    absl::StrAppend(&scaled, scaled.empty() ? "" : "; ", msg);
    process::LogJson(
        "info", "scaled",
        {{"endpoint", absl::StrCat(e.subject.ns, "/", e.subject.name)},
         {"deployment", v.deployment},
         {"from", from},
         {"to", to[i]},
         {"reason", policy::ScaleReasonName(v.reason)},
         {"message", why}});
    w.events.Record(e.subject, "Normal",
                    to[i] == 0     ? "ScaledToZero"
                    : to[i] > from ? "ScaledUp"
                                   : "ScaledDown",
                    msg);
  }
  return absl::OkStatus();
}

// The pool's size by its rule (pool_sizing.h), when its Deployment opts in
// (pilotlight.dev/max-pool-pods); the SleepPool condition says what set it.
// Leader and standby alike step the rule, so a new leader's window is warm.
void Reconciler::SizePool(Endpoint& e, Observed& o, const policy::Decision& d,
                          absl::Time now) {
  if (o.pool_deployment.empty()) {
    return;
  }
  const kube::ObjectCache::ObjectPtr dep =
      in_.deployments.Get(o.pool_deployment);
  const std::string value = dep == nullptr
                                ? ""
                                : StringField(*dep, {"metadata", "annotations",
                                                     kMaxPoolPodsAnnotation});
  if (value.empty()) {
    pool_sizing_.Forget(o.pool_deployment);  // its size is its owner's
    return;
  }
  std::string note;
  if (const absl::StatusOr<int> most = ParseMaxPoolPods(value); !most.ok()) {
    note =
        absl::StrCat("; its size is left as it is: ", most.status().message());
  } else {
    // A pool pod starts as the endpoint's replicas do: the lead the
    // decision planned with (learned or modelled, a node's start included).
    const absl::Duration start =
        d.valid ? d.cold_start_lead : absl::ZeroDuration();
    const auto busy = static_cast<int>(
        std::count(o.pool_pod_busy.begin(), o.pool_pod_busy.end(), true));
    o.pool_size = pool_sizing_.Step(o.pool_deployment, now, busy, start, *most);
    note = absl::StrCat("; Pilotlight sizes the pool to ", o.pool_size->reason);
    if (e.status.pool) {
      e.status.pool->sized_pods = o.pool_size->pods;
      e.status.pool->sized_by = o.pool_size->reason;
    }
  }
  const auto& all = e.status.conditions.all();
  if (const auto it = all.find("SleepPool"); it != all.end()) {
    const Condition c = it->second;
    e.status.conditions.Set("SleepPool", c.status, c.reason,
                            absl::StrCat(c.message, note), now);
  }
}

// The leader patches the pool Deployment to the rule's size. Before a
// scale-down its pods with an engine awake get a higher deletion cost, so
// the ReplicaSet takes the free ones.
absl::Status Reconciler::ScalePool(const Endpoint& e, const Observed& o,
                                   Writers& w, std::string& scaled) {
  if (!o.pool_size) {
    return absl::OkStatus();
  }
  const kube::ObjectCache::ObjectPtr dep =
      in_.deployments.Get(o.pool_deployment);
  if (dep == nullptr) {
    return absl::OkStatus();
  }
  const auto from = static_cast<int32_t>(IntField(*dep, {"spec", "replicas"}));
  const int32_t to = o.pool_size->pods;
  if (to == from) {
    return absl::OkStatus();
  }
  const std::string name = o.pool_deployment.substr(e.subject.ns.size() + 1);
  if (to < from) {
    for (size_t i = 0; i < o.pool_pods.size(); ++i) {
      const kube::ObjectCache::ObjectPtr pod = in_.pods.Get(o.pool_pods[i]);
      const int32_t cost = o.pool_pod_busy[i] ? 1 : 0;
      if (pod == nullptr ||
          StringField(*pod, {"metadata", "annotations", kPodDeletionCost}) ==
              absl::StrCat(cost)) {
        continue;
      }
      if (absl::Status st = w.patcher.SetDeletionCost(
              e.subject.ns, StringField(*pod, {"metadata", "name"}), cost);
          !st.ok()) {
        process::LogJson("warn", "pod deletion cost not set",
                         {{"pod", o.pool_pods[i]},
                          {"cost", cost},
                          {"error", st.ToString()}});
      }
    }
  }
  // Several endpoints share the pool: the first of a tick patches, the
  // others see the new replicas in the cache, or patch the same number.
  PL_RETURN_IF_ERROR(w.patcher.Scale(e.subject.ns, name, to));
  const std::string msg = absl::StrCat("sleep pool ", name, ": ", from, " -> ",
                                       to, " (", o.pool_size->reason, ")");
  absl::StrAppend(&scaled, scaled.empty() ? "" : "; ", msg);
  process::LogJson(
      "info", "sleep pool scaled",
      {{"endpoint", absl::StrCat(e.subject.ns, "/", e.subject.name)},
       {"deployment", name},
       {"from", from},
       {"to", to},
       {"message", o.pool_size->reason}});
  w.events.Record(e.subject, "Normal",
                  to > from ? "SleepPoolScaledUp" : "SleepPoolScaledDown", msg);
  return absl::OkStatus();
}

}  // namespace pilotlight::runtime
