#include "controller/runtime/reconciler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "controller/api/resources.h"
#include "controller/base/json_fields.h"
#include "controller/base/status_macros.h"
#include "controller/cluster/pod_facts.h"
#include "controller/policy/decider.h"
#include "controller/policy/decision_record.h"
#include "controller/policy/knative_autoscaler.h"
#include "controller/policy/variant_model.h"
#include "controller/process/log.h"
#include "controller/runtime/counterfactuals.h"
#include "controller/runtime/disruption_guard.h"
#include "controller/runtime/endpoint_status.h"
#include "controller/runtime/leaving_pods.h"
#include "controller/runtime/observe.h"
#include "controller/runtime/pool_engines.h"
#include "controller/runtime/reconciler_state.h"

namespace pilotlight::runtime {

using json = nlohmann::json;

Reconciler::Reconciler(policy::DeciderConfig config, ReconcilerInputs in,
                       const kube::Clock& clock, Metrics& metrics,
                       ReplicaPolicy policy)
    : config_(config),
      policy_(policy),
      in_(in),
      clock_(clock),
      metrics_(metrics) {}

Reconciler::~Reconciler() = default;

Reconciler::Endpoint& Reconciler::Slot(const std::string& key) {
  const std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Endpoint>& slot = endpoints_[key];
  if (!slot) {
    slot = std::make_unique<Endpoint>(config_);
  }
  return *slot;
}

std::optional<policy::Decision> Reconciler::LastDecision(
    const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = endpoints_.find(key);
  if (it == endpoints_.end()) {
    return std::nullopt;
  }
  // What was acted on: under --policy knative, its replicas.
  return it->second->knative_decision ? it->second->knative_decision
                                      : it->second->decision;
}

// Deleted: forget it and its series; its Deployments keep their replicas.
void Reconciler::Forget(const std::string& key) {
  in_.demand.Forget(key);  // what the demand sources keep for it
  if (counterfactuals_ != nullptr) {
    counterfactuals_->Forget(key);
  }
  if (pool_engines_ != nullptr) {
    pool_engines_->Forget(key);  // its engines are probed no more
  }
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = endpoints_.find(key);
  if (it == endpoints_.end()) {
    return;
  }
  RemoveGauges(*it->second);
  endpoints_.erase(it);
  process::LogJson("info",
                   "endpoint deleted; its Deployments keep their replicas",
                   {{"endpoint", key}});
}

absl::Status Reconciler::Reconcile(const std::string& key, Writers& w,
                                   bool leading) {
  const kube::ObjectCache::ObjectPtr ia = in_.autoscalers.Get(key);
  if (ia == nullptr) {
    Forget(key);
    return absl::OkStatus();
  }
  Endpoint& e = Slot(key);
  const absl::Time now = clock_.Now();
  ParseSpec(e, *ia);
  std::string reason;
  std::string message;
  std::vector<kube::ObjectCache::ObjectPtr> deps;
  if (!e.parsed.ok()) {
    const bool missing_class =
        e.parsed.status().code() == absl::StatusCode::kNotFound;
    reason = missing_class ? "GPUClassNotFound" : "InvalidSpec";
    message = std::string(e.parsed.status().message());
  } else {
    deps = FindDeployments(e, e.parsed->ns, reason, message);
  }
  if (!reason.empty()) {
    return NotReady(e, *ia, reason, message, w, leading, now);
  }
  Observed o = Observe(e, deps, now);
  const policy::Decision& d =
      DecideOnce(e, o, IntField(*ia, {"metadata", "generation"}), now);
  SizePool(e, o, d, now);
  if (leading) {
    SubmitCounterfactual(e, o, now);
  }
  std::string scaled;
  // Under KEDA its HPA writes the replicas, from the KEDA scaler's metric
  // (api::KedaScaler): two writers would fight.
  const bool keda = StringField(*ia, {"metadata", "annotations",
                                      kScaledByAnnotation}) == "keda";
  if (d.valid && leading && !keda) {
    PL_RETURN_IF_ERROR(Act(e, d, o, w, scaled));
  }
  if (leading) {
    GuardFromDisruption(e.subject.ns, o.pods, now, w.patcher);
    MarkLeaving(e.subject.ns, o.leaving_pods, w.patcher);
    PL_RETURN_IF_ERROR(ScalePool(e, o, w, scaled));
  }
  return Publish(e, d, o, scaled, w, leading, now);
}

namespace {
std::string PoolName(const api::AutoscalerResource& a) {
  return a.sleep_pool ? a.sleep_pool->deployment : "";
}

bool SameSeriesLabels(const api::AutoscalerResource& a,
                      const api::AutoscalerResource& b) {
  return PoolName(a) == PoolName(b) &&
         std::equal(
             a.spec.variants.begin(), a.spec.variants.end(),
             b.spec.variants.begin(), b.spec.variants.end(),
             [](const policy::VariantSpec& x, const policy::VariantSpec& y) {
               return x.deployment == y.deployment &&
                      x.gpu_class == y.gpu_class && x.capacity == y.capacity;
             });
}

// pilotlight_serving_state's states, and which one serves the next
// request: the endpoint's own Ready replicas, else an engine of its pool
// awake, else one asleep (a wake away), else none (a cold start away).
constexpr std::array<const char*, 4> kServingStates = {
    "replicas", "engine_awake", "engine_asleep", "zero"};

size_t ServingState(int32_t own_ready, size_t awake, size_t asleep) {
  return own_ready > 0 ? 0 : awake > 0 ? 1 : asleep > 0 ? 2 : 3;
}
}  // namespace

// Stage 1: the spec, against the GPUClasses it names (once per change of
// either).
void Reconciler::ParseSpec(Endpoint& e, const json& ia) {
  const std::shared_ptr<const GpuClassSet> gpu = in_.gpu_classes.Get();
  const std::string version = absl::StrCat(
      StringField(ia, {"metadata", "resourceVersion"}), "|", gpu->generation);
  if (version == e.parsed_version) {
    return;
  }
  e.parsed_version = version;
  absl::StatusOr<api::AutoscalerResource> parsed =
      api::ParseInferenceAutoscaler(ia, gpu->classes);
  // The series are labelled with the variants' deployment, class and
  // capacity type: a spec that changes those replaces them. (Every status
  // write changes the resourceVersion; most re-parses keep them.)
  if (!e.parsed.ok() || !parsed.ok() || !SameSeriesLabels(*e.parsed, *parsed)) {
    RemoveGauges(e);
  }
  e.parsed = std::move(parsed);
  e.subject = {StringField(ia, {"metadata", "namespace"}),
               StringField(ia, {"metadata", "name"}),
               StringField(ia, {"metadata", "uid"})};
  e.catalog.reset();
  e.classes.clear();
  e.pool_sleep = absl::FailedPreconditionError("no sleepPool");
  if (!e.parsed.ok()) {
    if (e.parsed.status().code() == absl::StatusCode::kNotFound &&
        !gpu->errors.empty()) {
      e.parsed = absl::NotFoundError(
          absl::StrCat(e.parsed.status().message(), " (", gpu->errors, ")"));
    }
    return;
  }
  std::map<std::string, api::GpuClassResource> used;
  for (const policy::VariantSpec& v : e.parsed->spec.variants) {
    used.emplace(v.gpu_class, gpu->classes.at(v.gpu_class));
    e.classes.push_back(gpu->classes.at(v.gpu_class));
  }
  if (e.parsed->sleep_pool) {
    const std::string& c = e.parsed->sleep_pool->gpu_class;
    used.emplace(c, gpu->classes.at(c));
  }
  absl::StatusOr<model::Catalog> catalog = api::CatalogOf(used);
  if (!catalog.ok()) {
    e.parsed = catalog.status();
    return;
  }
  e.catalog = std::make_shared<const model::Catalog>(*std::move(catalog));
  if (e.parsed->sleep_pool) {
    e.pool_sleep =
        policy::PoolSleep(e.parsed->spec, *e.catalog,
                          e.parsed->sleep_pool->gpu_class, "spec.sleepPool");
  }
}

// Every variant's Deployment, or the first that is missing.
std::vector<kube::ObjectCache::ObjectPtr> Reconciler::FindDeployments(
    Endpoint& e, const std::string& ns, std::string& reason,
    std::string& message) {
  std::vector<kube::ObjectCache::ObjectPtr> deps;
  e.deployments.clear();
  const auto& variants = e.parsed->spec.variants;
  for (size_t i = 0; i < variants.size(); ++i) {
    const std::string dk = absl::StrCat(ns, "/", variants[i].deployment);
    e.deployments.push_back(dk);
    kube::ObjectCache::ObjectPtr d = in_.deployments.Get(dk);
    if (d == nullptr && reason.empty()) {
      reason = "DeploymentNotFound";
      message = absl::StrCat("spec.variants[", i, "].deployment: Deployment ",
                             dk, " not found");
    }
    deps.push_back(std::move(d));
  }
  return deps;
}

absl::Status Reconciler::NotReady(Endpoint& e, const json& ia,
                                  const std::string& reason,
                                  const std::string& message, Writers& w,
                                  bool leading, absl::Time now) {
  const bool changed =
      e.status.conditions.Set("Ready", false, reason, message, now);
  if (changed && leading) {
    process::LogJson("warn", "endpoint not ready",
                     {{"endpoint", kube::ObjectKey(ia)},
                      {"reason", reason},
                      {"message", message}});
    w.events.Record(e.subject, "Warning", reason, message);
  }
  e.status.observed_generation = IntField(ia, {"metadata", "generation"});
  e.status.decided = false;
  if (!leading || (e.written && *e.written == e.status)) {
    return absl::OkStatus();
  }
  const DecisionNote note{now, "", nullptr, nullptr, nullptr};
  PL_RETURN_IF_ERROR(w.status.PatchStatus(e.subject.ns, e.subject.name,
                                          ToMergePatch(e.status, note)));
  e.written = e.status;
  return absl::OkStatus();
}

// Stage 2: replicas, learned cold starts, free nodes and spot health.
Reconciler::Observed Reconciler::Observe(
    Endpoint& e, const std::vector<kube::ObjectCache::ObjectPtr>& deps,
    absl::Time now) {
  const api::AutoscalerResource& a = *e.parsed;
  Observed o;
  o.snap.spec = &a.spec;
  o.snap.catalog = e.catalog.get();
  for (size_t i = 0; i < a.spec.variants.size(); ++i) {
    const std::string& dk = e.deployments[i];
    std::vector<kube::ObjectCache::ObjectPtr> pods;
    for (const std::string& pk : in_.index.PodsOf(dk)) {
      pods.push_back(in_.pods.Get(pk));
      if (pods.back() != nullptr) {
        o.pods.push_back(pods.back());
      }
    }
    VariantObservation v = ObserveVariant(
        e.classes[i], a.spec.variants[i], *deps[i], pods,
        in_.index.FreeGpus(
            cluster::PoolSelector(*deps[i], e.classes[i].node_selector)),
        in_.index.LastDisruption(dk),
        [this](const json& p) { return in_.index.NoticeFor(p); }, now,
        e.cold_start[dk]);
    for (absl::Duration cold : v.new_cold_starts) {
      metrics_.ColdStartOf(a.spec.variants[i].gpu_class)
          .Observe(absl::ToDoubleSeconds(cold));
    }
    o.ready_pods.insert(o.ready_pods.end(), v.ready_pods.begin(),
                        v.ready_pods.end());
    // Leaving pods still serve: their requests are demand.
    o.ready_pods.insert(o.ready_pods.end(), v.leaving_ready.begin(),
                        v.leaving_ready.end());
    o.replicas.push_back(v.replicas);
    o.leaving.push_back(static_cast<int32_t>(v.leaving.size()));
    o.leaving_pods.insert(o.leaving_pods.end(), v.leaving.begin(),
                          v.leaving.end());
    o.variant_pods.push_back(v.ready_pods);
    if (v.spot) {
      o.snap.spot.push_back(*std::move(v.spot));
    }
    o.own_ready += v.state.ready;
    o.snap.variants.push_back(std::move(v.state));
  }
  ObservePool(e, o, now);
  return o;
}

// Its engines in spec.sleepPool (pool_engines.h): at zero, an engine awake
// is a ready replica of the first variant and the ones asleep its
// SleepState; the SleepPool condition says what the pool gives, or why
// the endpoint's own replicas serve from zero without it.
void Reconciler::ObservePool(Endpoint& e, Observed& o, absl::Time now) {
  const api::AutoscalerResource& a = *e.parsed;
  const std::string key = absl::StrCat(a.ns, "/", a.name);
  e.status.pool.reset();
  if (!a.sleep_pool || pool_engines_ == nullptr) {
    e.status.conditions.Remove("SleepPool");
    if (pool_engines_ != nullptr) {
      pool_engines_->Forget(key);
    }
    return;
  }
  const api::SleepPoolSpec& pool = *a.sleep_pool;
  // Engines not answering are still looked at (probed until they do).
  const auto unused = [&](const std::string& reason, const std::string& why) {
    e.status.conditions.Set(
        "SleepPool", false, reason,
        absl::StrCat(why, ": its own replicas serve from zero"), now);
  };
  if (!e.pool_sleep.ok()) {
    pool_engines_->Forget(key);
    unused("NoRoomAsleep", std::string(e.pool_sleep.status().message()));
    return;
  }
  std::vector<std::string> addresses;
  std::vector<std::string> ips;
  o.pool_deployment = absl::StrCat(a.ns, "/", pool.deployment);
  for (const std::string& pk : in_.index.PodsOf(o.pool_deployment)) {
    const kube::ObjectCache::ObjectPtr p = in_.pods.Get(pk);
    const std::string ip =
        p == nullptr ? "" : StringField(*p, {"status", "podIP"});
    if (p != nullptr && cluster::PodReady(*p) && !cluster::PodTerminating(*p) &&
        !ip.empty()) {
      addresses.push_back(absl::StrCat(ip, ":", pool.port));
      ips.push_back(ip);
      o.pool_pods.push_back(pk);
    }
  }
  // As the last probes saw them (a pool without Ready pods: none busy).
  o.pool_pod_busy = pool_engines_->AnEngineAwakeOn(ips);
  if (addresses.empty()) {
    pool_engines_->Forget(key);
    unused("NoPoolPods", absl::StrCat("no Ready pod of Deployment ", a.ns, "/",
                                      pool.deployment));
    return;
  }
  const std::vector<PoolEngines::State> states =
      pool_engines_->Look(key, addresses);
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (states[i] == PoolEngines::State::kAwake) {
      o.pool_awake.push_back(addresses[i]);
    } else if (states[i] == PoolEngines::State::kAsleep) {
      o.pool_asleep.push_back(addresses[i]);
    }
  }
  if (o.pool_awake.empty() && o.pool_asleep.empty()) {
    e.wake_pending_since = absl::InfiniteFuture();
    e.wake_stalled = false;
    e.wake_refused = false;
    unused("EnginesNotAnswering",
           absl::StrCat("no engine at port ", pool.port, " of the ",
                        addresses.size(), " Ready pod(s) of ", pool.deployment,
                        " answers GET /is_sleeping (not up yet, or no sleep "
                        "mode)"));
    return;
  }
  const bool at_zero = std::all_of(o.replicas.begin(), o.replicas.end(),
                                   [](int32_t r) { return r == 0; });
  if (WakeStalled(e, o, at_zero, now)) {
    const std::string waited = absl::FormatDuration(
        absl::Trunc(now - e.wake_pending_since, absl::Seconds(1)));
    if (e.wake_refused) {
      unused("WakeRefused",
             absl::StrFormat(
                 "the activator's wake of its engine in %s was refused by "
                 "the pod, not for want of GPU room, for %s (the activator "
                 "asks again meanwhile)",
                 pool.deployment, waited));
      return;
    }
    unused("WakeStalled",
           absl::StrFormat(
               "its engine in %s has been asleep for %s with requests "
               "waiting (a wake takes %s: the activator waits for GPU room "
               "on the pool's pods, or the wake fails)",
               pool.deployment, waited,
               absl::FormatDuration(
                   absl::Trunc(e.pool_sleep->wake, absl::Milliseconds(10)))));
    return;
  }
  o.pool = true;
  const auto awake = static_cast<int32_t>(o.pool_awake.size());
  const auto asleep = static_cast<int32_t>(o.pool_asleep.size());
  policy::VariantState& first = o.snap.variants.front();
  if (at_zero) {
    first.ready += awake;
    first.desired += awake;
  }
  // Past zero its engines serve no more once its own replicas do: each
  // one a wake away.
  first.sleep = {.wake = e.pool_sleep->wake,
                 .asleep = at_zero ? asleep : asleep + awake,
                 .asleep_price_per_hour = e.pool_sleep->asleep_price_per_hour};
  const auto pods = static_cast<int32_t>(ips.size());
  const auto busy = static_cast<int32_t>(
      std::count(o.pool_pod_busy.begin(), o.pool_pod_busy.end(), true));
  e.status.pool =
      PoolStatus{pool.deployment,
                 awake,
                 asleep,
                 e.pool_sleep->wake,
                 std::llround(e.pool_sleep->asleep_price_per_hour * 1000),
                 pods,
                 busy};
  e.status.conditions.Set(
      "SleepPool", true, "EnginesFound",
      absl::StrFormat(
          "%d engine(s) in %s at port %d; a wake takes %s, an engine asleep "
          "costs $%.2f/h; %d of its %d pod(s) have an engine awake%s",
          awake + asleep, pool.deployment, pool.port,
          absl::FormatDuration(e.pool_sleep->wake),
          e.pool_sleep->asleep_price_per_hour, busy, pods,
          busy >= pods ? " (every one: a wake waits for an idle engine to be "
                         "put to sleep; simulate --sleep-pool's PEAK-AWAKE "
                         "sizes a pool)"
                       : ""),
      now);
}

// A wake ends within two wakes (an idle neighbour's sleep makes room on the
// GPU, then its own) when the pool has room; while its GPUs are held by
// neighbours with requests in flight, it waits for one to be idle, and a
// wake may fail. Requests at zero that have waited on engines all asleep
// for as long as a cold start of the endpoint's own takes (its lead; at
// least two wakes and the TTFT SLO) get one: the ski rental of the keep-
// alive -- a wake that ends sooner starts nothing (a burst over a small
// pool is served by it), one that never does costs at most a second lead.
// Its own replicas then serve from zero, as without a pool, until one is
// Ready (or the requests are gone). A wake the pod refuses for another
// reason than room (the activators report it) gets one after two wakes
// and the TTFT SLO instead of the lead: making room cannot mend it. Seen
// through the engines' probes (every second) and the demand of the last
// tick.
bool Reconciler::WakeStalled(Endpoint& e, const Observed& o, bool at_zero,
                             absl::Time now) {
  const policy::DemandSample& s = e.last_sample;
  const bool requests = s.in_flight.value_or(0) > 0 ||
                        s.queued.value_or(0) > 0 || s.arrivals.value_or(0) > 0;
  if (e.wake_stalled) {
    if (o.own_ready == 0 && (!at_zero || requests)) {
      return true;
    }
    // Its own replica serves, or nothing waits.
    e.wake_stalled = false;
    e.wake_refused = false;
  }
  if (!at_zero || !requests || !o.pool_awake.empty()) {
    e.wake_pending_since = absl::InfiniteFuture();
    e.wake_refused = false;
    return false;
  }
  e.wake_pending_since = std::min(e.wake_pending_since, now);
  // A refusal making room cannot mend (an engine broken or restarting)
  // ends the wait sooner: after what a wake through a neighbour's sleep
  // takes, not a lead -- a neighbour still falling asleep is refused room
  // for that long.
  e.wake_refused = e.wake_refused || s.wakes_refused > 0;
  const absl::Duration two_wakes =
      2 * e.pool_sleep->wake + e.parsed->spec.slo.ttft;
  const absl::Duration after =
      e.wake_refused ? two_wakes
                     : std::max(e.decision ? e.decision->cold_start_lead
                                           : absl::ZeroDuration(),
                                two_wakes);
  if (now - e.wake_pending_since < after) {
    return false;
  }
  e.wake_stalled = true;
  process::LogJson(
      "warning",
      e.wake_refused ? "pool engine wake refused" : "pool engine wake stalled",
      {{"endpoint", absl::StrCat(e.subject.ns, "/", e.subject.name)},
       {"waited_s", absl::ToDoubleSeconds(now - e.wake_pending_since)},
       {"wake_s", absl::ToDoubleSeconds(e.pool_sleep->wake)}});
  return true;
}

// The Ready replicas a replay of the record starts from, and every
// `every` a replay of the record handed to the replayer (off this thread).
void Reconciler::SubmitCounterfactual(Endpoint& e, const Observed& o,
                                      absl::Time now) {
  if (counterfactuals_ == nullptr || !e.parsed.ok() || !e.catalog) {
    return;
  }
  std::vector<int> ready(o.snap.variants.size());
  for (size_t i = 0; i < ready.size(); ++i) {
    ready[i] = o.snap.variants[i].ready;
  }
  e.replicas.Record(now, std::move(ready));
  if (now < e.next_counterfactual) {
    return;
  }
  e.next_counterfactual = now + counterfactuals_->options().every;
  CounterfactualJob job;
  job.key = absl::StrCat(e.subject.ns, "/", e.subject.name);
  job.record = e.record;
  job.replicas = e.replicas;
  job.spec = e.parsed->spec;
  job.catalog = e.catalog;
  for (const policy::VariantState& v : o.snap.variants) {
    if (v.cold_start.samples > 0) {
      job.cold_start = v.cold_start.p50;
      break;
    }
  }
  job.target_utilization = config_.target_utilization;
  counterfactuals_->Submit(std::move(job));
}

// Stage 3: one demand sample per demand epoch, one decision per sample (the
// policy's windows and rate limits count decisions), or at once when the
// spec changed. A reconcile prompted by a pod or Deployment event in
// between keeps the last decision.
const policy::Decision& Reconciler::DecideOnce(Endpoint& e, Observed& o,
                                               int64_t generation,
                                               absl::Time now) {
  const int64_t epoch = in_.demand.Epoch(e.parsed->spec.name);
  const bool new_demand = epoch != e.demand_epoch;
  if (new_demand) {
    std::string missing;
    const policy::DemandSample s =
        in_.demand.Read(*e.parsed, o.ready_pods, now, missing);
    e.demand_epoch = epoch;
    e.missing = missing;
    e.last_sample = s;
    if (s.arrivals && !s.partial) {
      e.record.Add(now, std::llround(std::max(0.0, *s.arrivals)));
    }
    if (s.in_flight || s.queued || s.arrivals) {
      e.pending.push_back(s);
    }
  }
  const bool decide =
      new_demand || !e.decision || e.decided_generation != generation;
  if (decide) {
    o.snap.demand = e.pending;
    e.decision = e.decider.Decide(o.snap, now);
    e.decided_generation = generation;
    metrics_.decisions
        .Add({{"namespace", e.subject.ns},
              {"name", e.subject.name},
              {"reason",
               std::string(policy::ScaleReasonName(e.decision->reason))}})
        .Increment();
  }
  const policy::Decision& d =
      policy_ == ReplicaPolicy::kKnative ? Knative(e, o, now) : *e.decision;
  if (decide && decision_log_) {
    decision_log_(
        policy::DecisionRecord(absl::StrCat(e.subject.ns, "/", e.subject.name),
                               o.snap, d, now, absl::UnixEpoch()));
  }
  e.pending.clear();
  o.snap.demand = {};
  return d;
}

// The latest replay's running cost and the cheapest as good, as gauges
// (NaN: no table yet, or the record no longer supports one); and an Event
// when a cheaper candidate than before is found.
void Reconciler::PublishCounterfactual(Endpoint& e,
                                       const std::optional<Counterfactual>& cf,
                                       Writers& w, bool leading) {
  if (!e.gauges) {
    return;
  }
  const Endpoint::Gauges& g = *e.gauges;
  const CounterfactualRow* running = cf ? RunningRow(*cf) : nullptr;
  if (running == nullptr) {
    g.cf_running->Set(std::numeric_limits<double>::quiet_NaN());
    g.cf_cheapest->Set(std::numeric_limits<double>::quiet_NaN());
    return;
  }
  const std::optional<size_t> cheaper = CheaperAsGood(*cf);
  const CounterfactualRow& best = cheaper ? cf->rows[*cheaper] : *running;
  g.cf_running->Set(running->cost_per_hour);
  g.cf_cheapest->Set(best.cost_per_hour);
  const std::string name = cheaper ? CandidateName(best) : "";
  if (name == e.cheaper_announced) {
    return;
  }
  e.cheaper_announced = name;
  if (leading && cheaper) {
    w.events.Record(
        e.subject, "Normal", "CheaperPolicyReplayed",
        absl::StrFormat(
            "%s would have cost $%.4f/h over the last %d min of this "
            "endpoint's traffic at %s's SLO attainment and cold-start share "
            "or better, against $%.4f/h running (%.0f%% less; pilotlight "
            "explain)",
            name, best.cost_per_hour,
            absl::ToInt64Minutes(cf->window - cf->warmup),
            CandidateName(*running), running->cost_per_hour,
            100 * (1 - best.cost_per_hour / running->cost_per_hour)));
  }
}

void Reconciler::RemoveGauges(Endpoint& e) {
  if (!e.gauges) {
    return;
  }
  const Endpoint::Gauges& g = *e.gauges;
  for (size_t i = 0; i < g.variants.size(); ++i) {
    metrics_.desired.Remove(g.variants[i].first);
    metrics_.ready.Remove(g.variants[i].second);
  }
  metrics_.cost.Remove(g.cost);
  metrics_.always_on_cost.Remove(g.always_on);
  metrics_.demand.Remove(g.demand);
  metrics_.capacity.Remove(g.capacity);
  metrics_.decode_calibration.Remove(g.calibration);
  metrics_.warm_pool.Remove(g.warm_pool);
  metrics_.keep_alive.Remove(g.keep_alive);
  metrics_.slo_cold_fraction.Remove(g.slo);
  metrics_.spot_fallback.Remove(g.spot_fallback);
  metrics_.counterfactual_running_cost.Remove(g.cf_running);
  metrics_.counterfactual_cheapest_cost.Remove(g.cf_cheapest);
  for (prometheus::Gauge* s : g.serving) {
    metrics_.serving_state.Remove(s);
  }
  metrics_.sleep_pool_engines.Remove(g.pool_awake);
  metrics_.sleep_pool_engines.Remove(g.pool_asleep);
  metrics_.sleep_pool_pods.Remove(g.pool_pods_busy);
  metrics_.sleep_pool_pods.Remove(g.pool_pods_free);
  metrics_.sleep_pool_sized.Remove(g.pool_sized);
  e.gauges.reset();
}

void Reconciler::UpdateGauges(Endpoint& e, const std::vector<int>& desired,
                              const Observed& o, const policy::Decision& d) {
  const api::AutoscalerResource& a = *e.parsed;
  if (!e.gauges) {  // cached: Add() hashes the labels
    const prometheus::Labels labels = {{"namespace", a.ns}, {"name", a.name}};
    Endpoint::Gauges g;
    for (const policy::VariantSpec& vs : a.spec.variants) {
      prometheus::Labels v = labels;
      v["deployment"] = vs.deployment;
      v["gpu_class"] = vs.gpu_class;
      v["capacity_type"] = std::string(policy::CapacityTypeName(vs.capacity));
      g.variants.emplace_back(&metrics_.desired.Add(v), &metrics_.ready.Add(v));
      metrics_.ColdStartOf(vs.gpu_class);
    }
    g.cost = &metrics_.cost.Add(labels);
    g.always_on = &metrics_.always_on_cost.Add(labels);
    g.demand = &metrics_.demand.Add(labels);
    g.capacity = &metrics_.capacity.Add(labels);
    g.calibration = &metrics_.decode_calibration.Add(labels);
    g.warm_pool = &metrics_.warm_pool.Add(labels);
    g.keep_alive = &metrics_.keep_alive.Add(labels);
    g.slo = &metrics_.slo_cold_fraction.Add(labels);
    g.spot_fallback = &metrics_.spot_fallback.Add(labels);
    g.cf_running = &metrics_.counterfactual_running_cost.Add(labels);
    g.cf_cheapest = &metrics_.counterfactual_cheapest_cost.Add(labels);
    g.cf_running->Set(std::numeric_limits<double>::quiet_NaN());
    g.cf_cheapest->Set(std::numeric_limits<double>::quiet_NaN());
    for (const char* state : kServingStates) {
      prometheus::Labels l = labels;
      l["state"] = state;
      g.serving.push_back(&metrics_.serving_state.Add(l));
    }
    prometheus::Labels pool = labels;
    pool["pool"] = PoolName(a);
    pool["state"] = "awake";
    g.pool_awake = &metrics_.sleep_pool_engines.Add(pool);
    pool["state"] = "asleep";
    g.pool_asleep = &metrics_.sleep_pool_engines.Add(pool);
    pool["state"] = "busy";
    g.pool_pods_busy = &metrics_.sleep_pool_pods.Add(pool);
    pool["state"] = "free";
    g.pool_pods_free = &metrics_.sleep_pool_pods.Add(pool);
    pool.erase("state");
    g.pool_sized = &metrics_.sleep_pool_sized.Add(pool);
    e.gauges = std::move(g);
  }
  const Endpoint::Gauges& g = *e.gauges;
  const size_t serving =
      ServingState(o.own_ready, o.pool_awake.size(), o.pool_asleep.size());
  for (size_t i = 0; i < g.serving.size(); ++i) {
    g.serving[i]->Set(i == serving ? 1 : 0);
  }
  g.pool_awake->Set(static_cast<double>(o.pool_awake.size()));
  g.pool_asleep->Set(static_cast<double>(o.pool_asleep.size()));
  const PoolStatus* pool = e.status.pool ? &*e.status.pool : nullptr;
  g.pool_pods_busy->Set(pool != nullptr ? pool->pods_with_an_engine_awake : 0);
  g.pool_pods_free->Set(
      pool != nullptr ? pool->pods - pool->pods_with_an_engine_awake : 0);
  g.pool_sized->Set(pool != nullptr && !pool->sized_by.empty()
                        ? pool->sized_pods
                        : std::numeric_limits<double>::quiet_NaN());
  int ready = 0;
  for (size_t i = 0; i < desired.size(); ++i) {
    g.variants[i].first->Set(desired[i]);
    g.variants[i].second->Set(o.snap.variants[i].ready);
    ready += o.snap.variants[i].ready;
  }
  g.cost->Set(d.cost_per_hour);
  g.slo->Set(a.spec.slo.max_cold_start_fraction);
  if (d.valid) {  // a hold carries no sizing
    g.always_on->Set(d.always_on_cost_per_hour);
    g.demand->Set(d.demand_concurrency);
    g.capacity->Set(static_cast<double>(d.capacity_per_replica) * ready);
    g.calibration->Set(d.decode_calibration);
    g.warm_pool->Set(d.warm_pool);
    g.keep_alive->Set(absl::ToDoubleSeconds(d.keep_alive));
    g.spot_fallback->Set(
        std::any_of(d.variants.begin(), d.variants.end(),
                    [](const policy::VariantDecision& v) {
                      return v.reason == policy::ScaleReason::kSpotFallback;
                    })
            ? 1
            : 0);
  }
}

// Stage 5: conditions, replicas, what was decided and why; written when it
// differs from the status last written, or when replicas were patched.
absl::Status Reconciler::Publish(Endpoint& e, const policy::Decision& d,
                                 const Observed& o, const std::string& scaled,
                                 Writers& w, bool leading, absl::Time now) {
  const api::AutoscalerResource& a = *e.parsed;
  EndpointStatus& st = e.status;
  st.observed_generation = a.generation;
  st.decided = true;
  st.conditions.Set("Ready", true, "Reconciled", "", now);
  std::vector<int> desired(a.spec.variants.size());
  int total = 0;
  st.variants.clear();
  for (size_t i = 0; i < a.spec.variants.size(); ++i) {
    const policy::VariantSpec& vs = a.spec.variants[i];
    const policy::VariantState& state = o.snap.variants[i];
    desired[i] = d.valid ? d.variants[i].replicas : state.desired;
    total += desired[i];
    st.variants.push_back({vs.deployment, vs.gpu_class,
                           std::string(policy::CapacityTypeName(vs.capacity)),
                           desired[i], state.ready, state.node_free});
  }
  UpdateGauges(e, desired, o, d);
  if (!e.missing.empty()) {
    // The parts end with "; " to be joined: not the message itself.
    const absl::string_view missing =
        absl::StripSuffix(absl::StripTrailingAsciiWhitespace(e.missing), ";");
    st.conditions.Set("Degraded", true,
                      d.valid ? "MetricsIncomplete" : "MetricsUnavailable",
                      d.valid ? std::string(missing)
                              : absl::StrCat("holding replicas: ", missing),
                      now);
  } else {
    st.conditions.Set("Degraded", false, "AsExpected", "", now);
  }
  st.conditions.Set("ScaledToZero", total == 0, total == 0 ? "Idle" : "Serving",
                    total == 0 ? "every variant is at 0 replicas" : "", now);
  // The serving tier's learned cold start (the first variant on it).
  size_t tier_variant = a.spec.variants.size() - 1;
  for (size_t i = 0; i < a.spec.variants.size(); ++i) {
    if (a.spec.variants[i].gpu_class == d.tier) {
      tier_variant = i;
      break;
    }
  }
  const policy::ColdStartStats& cs = o.snap.variants[tier_variant].cold_start;
  st.tier = d.tier;
  st.warm_pool = d.warm_pool;
  st.concurrency_per_replica = d.capacity_per_replica;
  st.keep_alive_seconds = absl::ToInt64Seconds(d.keep_alive);
  st.keep_alive_until = d.keep_alive_until;
  st.cost_milli_per_hour = std::llround(d.cost_per_hour * 1000);
  st.cold_start_samples = cs.samples;
  st.cold_start_p50 = cs.p50;
  st.cold_start_p90 = cs.p90;
  st.cold_start_lead = d.cold_start_lead;
  st.reason = std::string(policy::ScaleReasonName(d.reason));
  const std::optional<Counterfactual> cf =
      counterfactuals_ != nullptr
          ? counterfactuals_->Latest(absl::StrCat(a.ns, "/", a.name))
          : std::nullopt;
  // A new table is a change of the status; a note (too little history)
  // goes along with other changes only, so idle endpoints' statuses are
  // not rewritten every replay.
  st.counterfactual_at = cf && !cf->rows.empty()
                             ? std::optional<absl::Time>(cf->at)
                             : std::nullopt;
  PublishCounterfactual(e, cf, w, leading);
  if (!leading || (e.written && *e.written == st && scaled.empty())) {
    return absl::OkStatus();
  }
  const DecisionNote note{now, d.message, EconomicsJson(d),
                          TrafficHistoryJson(e.record),
                          cf ? CounterfactualJson(*cf) : nullptr};
  PL_RETURN_IF_ERROR(
      w.status.PatchStatus(a.ns, a.name, ToMergePatch(st, note)));
  e.written = st;
  return absl::OkStatus();
}

}  // namespace pilotlight::runtime
