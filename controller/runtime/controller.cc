#include "controller/runtime/controller.h"

#include <httplib.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/api/resources.h"
#include "controller/kube/informer.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/throttle.h"
#include "controller/kube/update.h"
#include "controller/kube/work_queue.h"
#include "controller/base/status_macros.h"
#include "controller/policy/decider.h"
#include "controller/prom/demand.h"
#include "controller/prom/prom_client.h"
#include "controller/runtime/log.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace pilotlight::runtime {
namespace {

using json = nlohmann::json;
using kube::EventType;
using kube::KubeClient;

constexpr char kGroupPath[] = "/apis/pilotlight.dev/v1alpha1";
constexpr size_t kColdStartSamples = 64;

std::string Time(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::optional<absl::Time> ParseTime(const json& v) {
  if (!v.is_string()) {
    return std::nullopt;
  }
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, v.get<std::string>(), &t, &err)) {
    return std::nullopt;
  }
  return t;
}

const json& Field(const json& obj, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* cur = &obj;
  for (const char* p : path) {
    if (!cur->is_object()) {
      return kNull;
    }
    auto it = cur->find(p);
    if (it == cur->end()) {
      return kNull;
    }
    cur = &*it;
  }
  return *cur;
}

int IntField(const json& obj, std::initializer_list<const char*> path) {
  const json& v = Field(obj, path);
  return v.is_number_integer() ? v.get<int>() : 0;
}

// The Deployment a ReplicaSet-owned pod belongs to: the ReplicaSet is named
// <deployment>-<pod-template-hash>.
std::string PodDeploymentKey(const json& pod) {
  const json& meta = Field(pod, {"metadata"});
  const std::string hash =
      Field(meta, {"labels", "pod-template-hash"}).is_string()
          ? Field(meta, {"labels", "pod-template-hash"}).get<std::string>()
          : "";
  if (hash.empty()) {
    return "";
  }
  for (const json& o : meta.value("ownerReferences", json::array())) {
    if (o.value("kind", "") != "ReplicaSet") {
      continue;
    }
    const std::string rs = o.value("name", "");
    const std::string suffix = "-" + hash;
    if (rs.size() > suffix.size() &&
        rs.compare(rs.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return absl::StrCat(meta.value("namespace", ""), "/",
                          rs.substr(0, rs.size() - suffix.size()));
    }
  }
  return "";
}

std::optional<absl::Time> ConditionTime(const json& pod, const char* type) {
  for (const json& c : Field(pod, {"status", "conditions"}).is_array()
                           ? Field(pod, {"status", "conditions"})
                           : json::array()) {
    if (c.value("type", "") == type && c.value("status", "") == "True") {
      return ParseTime(c.value("lastTransitionTime", json()));
    }
  }
  return std::nullopt;
}

// When the cluster took this pod away (a spot reclaim, a node gone, an
// eviction): the DisruptionTarget condition Kubernetes sets, or a pod
// failed by its node's shutdown or an eviction.
std::optional<absl::Time> DisruptedAt(const json& pod) {
  const json& conds = Field(pod, {"status", "conditions"});
  if (conds.is_array()) {
    for (const json& c : conds) {
      if (c.value("type", "") == "DisruptionTarget" &&
          c.value("status", "") == "True") {
        return ParseTime(c.value("lastTransitionTime", json()));
      }
    }
  }
  const json& status = Field(pod, {"status"});
  const std::string reason =
      status.is_object() ? status.value("reason", "") : "";
  if (status.is_object() && status.value("phase", "") == "Failed" &&
      (reason == "Evicted" || reason == "NodeShutdown" ||
       reason == "Terminated" || reason == "Shutdown")) {
    return ParseTime(Field(pod, {"metadata", "creationTimestamp"}));
  }
  return std::nullopt;
}

// A pod the scheduler cannot place (the pool has no room, e.g. no spot
// capacity).
bool Unschedulable(const json& pod) {
  const json& conds = Field(pod, {"status", "conditions"});
  if (!conds.is_array()) {
    return false;
  }
  for (const json& c : conds) {
    if (c.value("type", "") == "PodScheduled" &&
        c.value("status", "") == "False" &&
        c.value("reason", "") == "Unschedulable") {
      return true;
    }
  }
  return false;
}

// Cold starts of one variant, from its pods' condition times: created ->
// Ready, counted once per pod (the first time it is Ready).
class ColdStartLearner {
 public:
  // Returns the cold start when this pod gives a new sample.
  std::optional<absl::Duration> Observe(const json& pod) {
    const std::string uid =
        Field(pod, {"metadata", "uid"}).is_string()
            ? Field(pod, {"metadata", "uid"}).get<std::string>()
            : "";
    if (uid.empty() || counted_.count(uid) != 0) {
      return std::nullopt;
    }
    const std::optional<absl::Time> ready = ConditionTime(pod, "Ready");
    const std::optional<absl::Time> created =
        ParseTime(Field(pod, {"metadata", "creationTimestamp"}));
    if (!ready || !created || *ready < *created) {
      return std::nullopt;
    }
    const json& cs = Field(pod, {"status", "containerStatuses"});
    if (cs.is_array() && !cs.empty() && cs[0].value("restartCount", 0) > 0) {
      return std::nullopt;  // a restart, not a cold start
    }
    counted_.insert(uid);
    samples_.push_back(*ready - *created);
    if (samples_.size() > kColdStartSamples) {
      samples_.erase(samples_.begin());
    }
    return *ready - *created;
  }
  void Forget(const std::set<std::string>& live_uids) {
    for (auto it = counted_.begin(); it != counted_.end();) {
      it = live_uids.count(*it) == 0 ? counted_.erase(it) : std::next(it);
    }
  }
  policy::ColdStartStats Stats() const {
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

 private:
  std::set<std::string> counted_;
  std::vector<absl::Duration> samples_;
};

// What the controller keeps per endpoint between reconciles.
struct Endpoint {
  explicit Endpoint(const policy::DeciderConfig& c) : decider(c) {}
  policy::Decider decider;
  std::vector<policy::DemandSample> pending;
  int64_t demand_epoch = -1;
  absl::Time last_sample = absl::InfinitePast();
  std::map<std::string, ColdStartLearner> cold_start;  // per deployment
  std::vector<std::string> deployments;                // "ns/name"
  std::string parsed_version;  // resourceVersion + GPUClasses version
  absl::StatusOr<api::AutoscalerResource> parsed =
      absl::UnknownError("not parsed");
  struct Condition {
    bool status = false;
    std::string reason;
    std::string message;
    absl::Time since;  // lastTransitionTime: when `status` last changed
  };
  std::map<std::string, Condition> conditions;  // by type
  std::string written;                       // the status content last written
  std::optional<policy::Decision> decision;  // the last one
  int64_t decided_generation = -1;
  std::string missing;                      // what the last demand read lacked
  std::unique_ptr<model::Catalog> catalog;  // of the parsed spec's classes
  std::vector<std::pair<prometheus::Gauge*, prometheus::Gauge*>> gauges;
  prometheus::Gauge* cost_gauge = nullptr;
  std::string status_key;  // the inputs of the status last built
};

struct Metrics {
  explicit Metrics(prometheus::Registry& r)
      : desired(prometheus::BuildGauge()
                    .Name("pilotlight_desired_replicas")
                    .Help("Replicas Pilotlight decided, per variant")
                    .Register(r)),
        ready(prometheus::BuildGauge()
                  .Name("pilotlight_ready_replicas")
                  .Help("Ready replicas, per variant")
                  .Register(r)),
        cost(prometheus::BuildGauge()
                 .Name("pilotlight_cost_per_hour_dollars")
                 .Help("GPU cost per hour of the decided replicas")
                 .Register(r)),
        decisions(prometheus::BuildCounter()
                      .Name("pilotlight_decisions_total")
                      .Help("Decisions, by reason")
                      .Register(r)),
        cold_start(prometheus::BuildHistogram()
                       .Name("pilotlight_cold_start_seconds")
                       .Help("Pod created -> Ready, as learned per variant")
                       .Register(r)),
        reconcile(prometheus::BuildHistogram()
                      .Name("pilotlight_reconcile_duration_seconds")
                      .Help("One endpoint's reconcile")
                      .Register(r)
                      .Add({},
                           prometheus::Histogram::BucketBoundaries{
                               1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10})),
        tick_cpu(prometheus::BuildGauge()
                     .Name("pilotlight_tick_cpu_seconds")
                     .Help("CPU time (user+system) of the last tick's "
                           "reconciles of every endpoint")
                     .Register(r)
                     .Add({})),
        tick_endpoints(prometheus::BuildGauge()
                           .Name("pilotlight_tick_endpoints")
                           .Help("Endpoints reconciled in the last tick")
                           .Register(r)
                           .Add({})),
        api_errors(prometheus::BuildCounter()
                       .Name("pilotlight_api_errors_total")
                       .Help("Failed Kubernetes API writes")
                       .Register(r)
                       .Add({})),
        api_requests(prometheus::BuildGauge()
                         .Name("pilotlight_api_requests")
                         .Help("Kubernetes API requests sent (informers, "
                               "workers, leader election), since start")
                         .Register(r)
                         .Add({})),
        prom_errors(prometheus::BuildCounter()
                        .Name("pilotlight_prometheus_errors_total")
                        .Help("Prometheus queries that failed")
                        .Register(r)
                        .Add({})),
        prom_queries(prometheus::BuildCounter()
                         .Name("pilotlight_prometheus_queries_total")
                         .Help("Prometheus queries sent")
                         .Register(r)
                         .Add({})),
        prom_queries_per_tick(
            prometheus::BuildGauge()
                .Name("pilotlight_prometheus_queries_per_tick")
                .Help("Prometheus queries in the last tick")
                .Register(r)
                .Add({})),
        leader(prometheus::BuildGauge()
                   .Name("pilotlight_leader")
                   .Help("1 while this controller leads")
                   .Register(r)
                   .Add({})) {}

  prometheus::Family<prometheus::Gauge>& desired;
  prometheus::Family<prometheus::Gauge>& ready;
  prometheus::Family<prometheus::Gauge>& cost;
  prometheus::Family<prometheus::Counter>& decisions;
  prometheus::Family<prometheus::Histogram>& cold_start;
  prometheus::Histogram& reconcile;
  prometheus::Gauge& tick_cpu;
  prometheus::Gauge& tick_endpoints;
  prometheus::Counter& api_errors;
  prometheus::Gauge& api_requests;
  prometheus::Counter& prom_errors;
  prometheus::Counter& prom_queries;
  prometheus::Gauge& prom_queries_per_tick;
  prometheus::Gauge& leader;
};

// CPU time of the calling thread (a worker's reconciles, without the
// informers' and the HTTP server's).
double ThreadCpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

class Controller::Impl {
 public:
  Impl(ControllerOptions o, const kube::Clock& clock)
      : o_(std::move(o)),
        clock_(clock),
        throttle_(o_.qps, o_.burst, clock_),
        queue_(clock_),
        metrics_(registry_) {}

  absl::Status Run(const std::atomic<bool>& stop);
  int port() const { return port_.load(); }

 private:
  std::unique_ptr<kube::Informer> MakeInformer(const std::string& path) {
    kube::InformerOptions io;
    io.path = path;
    return std::make_unique<kube::Informer>(o_.kube, io, clock_, &throttle_);
  }
  void Wire();
  void TickLoop(const std::atomic<bool>& stop);
  void ReadDemand();
  void Worker();
  absl::Status Reconcile(const std::string& key, KubeClient& client);
  struct GpuClassSet {
    int64_t generation = 0;
    std::map<std::string, api::GpuClassResource> classes;
    std::string errors;  // of the GPUClasses that do not parse
  };
  std::shared_ptr<const GpuClassSet> GpuClasses();
  policy::DemandSample Demand(
      const api::AutoscalerResource& a,
      const std::vector<std::vector<kube::Informer::ObjectPtr>>& ready_pods,
      absl::Time now, std::string& missing);
  bool SetCondition(Endpoint& e, const std::string& type, bool status,
                    const std::string& reason, const std::string& message,
                    absl::Time now);
  absl::Status WriteStatus(KubeClient& client, const std::string& ns,
                           const std::string& name, const json& status);
  void Event(KubeClient& client, const json& ia, const std::string& type,
             const std::string& reason, const std::string& message);
  bool Leading() const { return !o_.leader_elect || leading_.load(); }

  ControllerOptions o_;
  const kube::Clock& clock_;
  kube::Throttle throttle_;
  kube::WorkQueue queue_;
  prometheus::Registry registry_;
  Metrics metrics_;
  std::atomic<int> port_{0};
  std::atomic<bool> leading_{false};

  std::unique_ptr<kube::Informer> autoscalers_;
  std::unique_ptr<kube::Informer> gpu_classes_;
  std::unique_ptr<kube::Informer> deployments_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<prom::PromClient> prom_;

  std::mutex index_mu_;  // the two indexes
  std::map<std::string, std::set<std::string>> deployment_endpoints_;
  std::map<std::string, std::set<std::string>> deployment_pods_;
  std::map<std::string, absl::Time> disrupted_;  // deployment -> last pod taken

  std::mutex demand_mu_;
  std::map<std::string, absl::StatusOr<prom::PodValues>> demand_;
  int64_t demand_epoch_ = 0;
  absl::Time demand_at_ = absl::InfinitePast();

  std::atomic<int64_t> gpu_generation_{1};  // bumped on any GPUClass event
  std::mutex gpu_mu_;
  std::shared_ptr<const GpuClassSet> gpu_set_;

  std::mutex endpoints_mu_;  // the map; each Endpoint is its worker's
  std::map<std::string, std::unique_ptr<Endpoint>> endpoints_;

  std::atomic<double> tick_cpu_acc_{0};
  std::atomic<int64_t> tick_reconciles_{0};
};

void Controller::Impl::Wire() {
  autoscalers_ =
      MakeInformer(absl::StrCat(kGroupPath, "/inferenceautoscalers"));
  gpu_classes_ = MakeInformer(absl::StrCat(kGroupPath, "/gpuclasses"));
  deployments_ = MakeInformer("/apis/apps/v1/deployments");
  pods_ = MakeInformer("/api/v1/pods");

  autoscalers_->AddHandler([this](EventType t, const json& ia) {
    const std::string key = kube::ObjectKey(ia);
    const std::string ns = Field(ia, {"metadata"}).value("namespace", "");
    std::set<std::string> deps;
    if (t != EventType::kDeleted) {
      for (const json& v : Field(ia, {"spec", "variants"}).is_array()
                               ? Field(ia, {"spec", "variants"})
                               : json::array()) {
        deps.insert(absl::StrCat(ns, "/", v.value("deployment", "")));
      }
    }
    {
      const std::lock_guard<std::mutex> lock(index_mu_);
      for (auto& [dep, keys] : deployment_endpoints_) {
        if (deps.count(dep) == 0) {
          keys.erase(key);
        }
      }
      for (const std::string& d : deps) {
        deployment_endpoints_[d].insert(key);
      }
    }
    queue_.Add(key);
  });
  gpu_classes_->AddHandler([this](EventType, const json&) {
    ++gpu_generation_;
    autoscalers_->ForEach(
        [this](const json& ia) { queue_.Add(kube::ObjectKey(ia)); });
  });
  const auto enqueue_for_deployment = [this](const std::string& dep) {
    std::set<std::string> keys;
    {
      const std::lock_guard<std::mutex> lock(index_mu_);
      auto it = deployment_endpoints_.find(dep);
      if (it != deployment_endpoints_.end()) {
        keys = it->second;
      }
    }
    for (const std::string& k : keys) {
      queue_.Add(k);
    }
  };
  deployments_->AddHandler([enqueue_for_deployment](EventType, const json& d) {
    enqueue_for_deployment(kube::ObjectKey(d));
  });
  pods_->AddHandler([this, enqueue_for_deployment](EventType t, const json& p) {
    const std::string dep = PodDeploymentKey(p);
    if (dep.empty()) {
      return;
    }
    const std::string key = kube::ObjectKey(p);
    bool watched = false;
    const std::optional<absl::Time> disrupted = DisruptedAt(p);
    {
      const std::lock_guard<std::mutex> lock(index_mu_);
      if (disrupted) {
        absl::Time& last = disrupted_[dep];
        last = std::max(last, *disrupted);
      }
      if (t == EventType::kDeleted) {
        auto it = deployment_pods_.find(dep);
        if (it != deployment_pods_.end()) {
          it->second.erase(key);
          if (it->second.empty()) {
            deployment_pods_.erase(it);
          }
        }
      } else {
        deployment_pods_[dep].insert(key);
      }
      watched = deployment_endpoints_.count(dep) != 0;
    }
    if (watched) {
      enqueue_for_deployment(dep);
    }
  });
}

absl::Status Controller::Impl::Run(const std::atomic<bool>& stop) {
  absl::StatusOr<std::unique_ptr<prom::PromClient>> prom =
      prom::PromClient::Create(o_.prometheus_url, o_.prometheus_timeout);
  if (!prom.ok()) {
    return prom.status();
  }
  prom_ = *std::move(prom);
  if (o_.leader_elect) {
    if (absl::Status st = kube::ValidateLeaderElectionConfig(o_.election);
        !st.ok()) {
      return st;
    }
  }
  // The HTTP endpoints come first: a port in use is a start-up error.
  httplib::Server http;
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
    metrics_.api_requests.Set(static_cast<double>(KubeClient::TotalRequests()));
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    r.set_content(out.str(), "text/plain; version=0.0.4");
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("ok\n", "text/plain");
  });
  http.Get("/readyz", [this](const httplib::Request&, httplib::Response& r) {
    const bool synced = autoscalers_ && autoscalers_->Synced() &&
                        gpu_classes_->Synced() && deployments_->Synced() &&
                        pods_->Synced();
    r.status = synced ? 200 : 503;
    r.set_content(synced ? "ok\n" : "informers not synced\n", "text/plain");
  });
  std::thread http_thread;
  if (!o_.listen_address.empty()) {
    const size_t colon = o_.listen_address.rfind(':');
    int p = 0;
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(o_.listen_address.substr(colon + 1), &p)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen ", o_.listen_address, ": want host:port"));
    }
    const std::string host = o_.listen_address.substr(0, colon);
    port_ = p == 0 ? http.bind_to_any_port(host)
                   : (http.bind_to_port(host, p) ? p : -1);
    if (port_ < 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", o_.listen_address));
    }
    http_thread = std::thread([&http] { http.listen_after_bind(); });
  }

  Wire();
  for (kube::Informer* i : {autoscalers_.get(), gpu_classes_.get(),
                            deployments_.get(), pods_.get()}) {
    i->Start();
  }
  // Nothing is decided from a half-filled cache (a Deployment not listed
  // yet is not a missing Deployment).
  for (absl::Time waited_since = clock_.Now();
       !stop && !(autoscalers_->Synced() && gpu_classes_->Synced() &&
                  deployments_->Synced() && pods_->Synced());) {
    clock_.SleepFor(absl::Milliseconds(50));
    if (clock_.Now() - waited_since > absl::Seconds(10)) {
      waited_since = clock_.Now();
      std::string errors;
      for (kube::Informer* i : {autoscalers_.get(), gpu_classes_.get(),
                                deployments_.get(), pods_.get()}) {
        if (!i->Synced()) {
          absl::StrAppend(&errors, i->last_error(), "; ");
        }
      }
      LogJson("warn", "waiting for the informers to sync",
              {{"errors", errors}});
    }
  }
  std::atomic<bool> stop_election{false};
  std::thread election;
  std::unique_ptr<KubeClient> election_client;
  if (o_.leader_elect) {
    absl::StatusOr<std::unique_ptr<KubeClient>> c = KubeClient::Create(o_.kube);
    if (!c.ok()) {
      return c.status();
    }
    election_client = *std::move(c);
    election = std::thread([&] {
      kube::LeaderElector elector(*election_client, o_.election, clock_);
      elector.Run(
          stop_election,
          [&] {
            leading_ = true;
            metrics_.leader.Set(1);
            LogJson("info", "leading", {{"identity", o_.election.identity}});
            autoscalers_->ForEach(
                [this](const json& ia) { queue_.Add(kube::ObjectKey(ia)); });
          },
          [&] {
            leading_ = false;
            metrics_.leader.Set(0);
            LogJson("warn", "stopped leading",
                    {{"identity", o_.election.identity}});
          });
    });
  } else {
    metrics_.leader.Set(1);
  }
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, o_.workers); ++i) {
    workers.emplace_back([this] { Worker(); });
  }
  LogJson("info", "controller started",
          {{"prometheus", o_.prometheus_url},
           {"tick_seconds", absl::ToDoubleSeconds(o_.tick)},
           {"leader_election", o_.leader_elect},
           {"metrics_port", port_.load()}});
  TickLoop(stop);

  queue_.ShutDown();
  for (std::thread& w : workers) {
    w.join();
  }
  stop_election = true;
  if (election.joinable()) {
    election.join();
  }
  for (kube::Informer* i : {autoscalers_.get(), gpu_classes_.get(),
                            deployments_.get(), pods_.get()}) {
    i->Stop();
  }
  http.stop();
  if (http_thread.joinable()) {
    http_thread.join();
  }
  LogJson("info", "controller stopped");
  return absl::OkStatus();
}

void Controller::Impl::TickLoop(const std::atomic<bool>& stop) {
  absl::Time next = clock_.Now();
  while (!stop) {
    if (clock_.Now() < next) {
      clock_.SleepFor(std::min(absl::Milliseconds(50), next - clock_.Now()));
      continue;
    }
    next += o_.tick;
    if (next < clock_.Now()) {
      next = clock_.Now() + o_.tick;  // fell behind: do not burst
    }
    if (!autoscalers_->Synced() || !deployments_->Synced() ||
        !pods_->Synced() || !gpu_classes_->Synced()) {
      continue;
    }
    // The last tick's reconciles are done or still queued; report them.
    metrics_.tick_cpu.Set(tick_cpu_acc_.exchange(0));
    metrics_.tick_endpoints.Set(
        static_cast<double>(tick_reconciles_.exchange(0)));
    ReadDemand();
    autoscalers_->ForEach(
        [this](const json& ia) { queue_.Add(kube::ObjectKey(ia)); });
  }
}

// One batched read per tick: every distinct query of the presets and
// custom PromQL in use, whatever the number of endpoints.
void Controller::Impl::ReadDemand() {
  std::set<std::string> queries;
  autoscalers_->ForEach([&](const json& ia) {
    const json& m = Field(ia, {"spec", "metrics"});
    const std::string server = m.value("server", "vllm");
    if (server == "custom") {
      queries.insert(m.value("concurrencyQuery", ""));
      queries.insert(m.value("arrivalRateQuery", ""));
      return;
    }
    absl::StatusOr<prom::MetricsServer> s = prom::ParseMetricsServer(server);
    if (s.ok()) {
      const prom::DemandQueries q = prom::PresetQueries(*s, o_.rate_window);
      queries.insert({q.in_flight, q.queued, q.arrival_rate, q.tokens_per_s});
    }
  });
  queries.erase("");
  prom::DemandReader reader(*prom_);
  const int64_t before = prom_->queries();
  const absl::Time at = clock_.Now();
  std::map<std::string, absl::StatusOr<prom::PodValues>> got =
      reader.Read(queries, at);
  const int64_t sent = prom_->queries() - before;
  metrics_.prom_queries.Increment(static_cast<double>(sent));
  metrics_.prom_queries_per_tick.Set(static_cast<double>(sent));
  for (const auto& [q, r] : got) {
    if (!r.ok()) {
      metrics_.prom_errors.Increment();
      LogJson("warn", "prometheus query failed",
              {{"query", q}, {"error", r.status().ToString()}});
    }
  }
  const std::lock_guard<std::mutex> lock(demand_mu_);
  demand_ = std::move(got);
  ++demand_epoch_;
  demand_at_ = at;
}

void Controller::Impl::Worker() {
  absl::StatusOr<std::unique_ptr<KubeClient>> c = KubeClient::Create(o_.kube);
  if (!c.ok()) {
    LogJson("error", "worker has no API client",
            {{"error", c.status().ToString()}});
    return;
  }
  KubeClient& client = **c;
  client.set_throttle(&throttle_);
  while (std::optional<std::string> key = queue_.Get()) {
    const double cpu0 = ThreadCpuSeconds();
    const absl::Time t0 = absl::Now();
    absl::Status st = Reconcile(*key, client);
    metrics_.reconcile.Observe(absl::ToDoubleSeconds(absl::Now() - t0));
    double cpu = ThreadCpuSeconds() - cpu0;
    // std::atomic<double> has no fetch_add before C++20 on every compiler.
    double cur = tick_cpu_acc_.load();
    while (!tick_cpu_acc_.compare_exchange_weak(cur, cur + cpu)) {
    }
    ++tick_reconciles_;
    if (st.ok()) {
      queue_.Forget(*key);
    } else {
      metrics_.api_errors.Increment();
      LogJson("warn", "reconcile failed; retrying",
              {{"endpoint", *key},
               {"error", st.ToString()},
               {"failures", queue_.Failures(*key) + 1}});
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

std::shared_ptr<const Controller::Impl::GpuClassSet>
Controller::Impl::GpuClasses() {
  const int64_t gen = gpu_generation_.load();
  const std::lock_guard<std::mutex> lock(gpu_mu_);
  if (!gpu_set_ || gpu_set_->generation != gen) {
    auto set = std::make_shared<GpuClassSet>();
    set->generation = gen;
    gpu_classes_->ForEach([&](const json& c) {
      absl::StatusOr<api::GpuClassResource> r = api::ParseGpuClass(c);
      if (r.ok()) {
        set->classes.emplace(r->gpu.name, *r);
      } else {
        absl::StrAppend(&set->errors, "GPUClass ", kube::ObjectKey(c), ": ",
                        r.status().message(), "; ");
      }
    });
    gpu_set_ = std::move(set);
  }
  return gpu_set_;
}

policy::DemandSample Controller::Impl::Demand(
    const api::AutoscalerResource& a,
    const std::vector<std::vector<kube::Informer::ObjectPtr>>& ready_pods,
    absl::Time now, std::string& missing) {
  prom::DemandQueries q;
  if (a.metrics.server == prom::MetricsServer::kCustom) {
    q.in_flight = a.metrics.concurrency_query;
    q.arrival_rate = a.metrics.arrival_rate_query;
  } else {
    q = prom::PresetQueries(a.metrics.server, o_.rate_window);
  }
  policy::DemandSample s;
  s.at = now;
  const std::lock_guard<std::mutex> lock(demand_mu_);
  // The sum of one signal over the endpoint's ready pods; unset when the
  // query failed or any ready pod has no series (missing is not zero).
  const auto sum = [&](const std::string& query,
                       const char* what) -> std::optional<double> {
    if (query.empty()) {
      return std::nullopt;
    }
    auto it = demand_.find(query);
    if (it == demand_.end()) {
      absl::StrAppend(&missing, what, ": not queried yet; ");
      return std::nullopt;
    }
    if (!it->second.ok()) {
      absl::StrAppend(&missing, what, ": ", it->second.status().message(),
                      "; ");
      return std::nullopt;
    }
    double total = 0;
    for (const auto& pods : ready_pods) {
      for (const kube::Informer::ObjectPtr& p : pods) {
        const std::string key = kube::ObjectKey(*p);
        auto v = it->second->find(key);
        if (v == it->second->end()) {
          absl::StrAppend(&missing, what, ": no series for pod ", key, "; ");
          return std::nullopt;
        }
        total += v->second;
      }
    }
    return total;
  };
  s.in_flight = sum(q.in_flight, "requests running");
  s.queued = sum(q.queued, "requests waiting");
  const std::optional<double> rate = sum(q.arrival_rate, "arrival rate");
  if (rate) {
    s.arrivals = *rate * absl::ToDoubleSeconds(o_.tick);
  }
  s.output_tokens_per_s = sum(q.tokens_per_s, "tokens/s");
  return s;
}

bool Controller::Impl::SetCondition(Endpoint& e, const std::string& type,
                                    bool status, const std::string& reason,
                                    const std::string& message,
                                    absl::Time now) {
  auto [it, added] = e.conditions.try_emplace(type);
  Endpoint::Condition& c = it->second;
  const bool changed =
      added || c.status != status || c.reason != reason || c.message != message;
  if (added || c.status != status) {
    c.since = now;
  }
  c.status = status;
  c.reason = reason;
  c.message = message;
  return changed;
}

namespace {

// The conditions as metav1.Condition objects.
json ConditionsJson(const Endpoint& e, int64_t generation) {
  json out = json::array();
  for (const auto& [type, c] : e.conditions) {
    out.push_back({{"type", type},
                   {"status", c.status ? "True" : "False"},
                   {"reason", c.reason},
                   {"message", c.message.substr(0, 1024)},
                   {"observedGeneration", generation},
                   {"lastTransitionTime", Time(c.since)}});
  }
  return out;
}

}  // namespace

absl::Status Controller::Impl::WriteStatus(KubeClient& client,
                                           const std::string& ns,
                                           const std::string& name,
                                           const json& status) {
  const std::string path =
      absl::StrCat(kGroupPath, "/namespaces/", ns, "/inferenceautoscalers/",
                   name, "/status");
  return kube::UpdateWithRetry(client, path,
                               [&](json& obj) { obj["status"] = status; });
}

void Controller::Impl::Event(KubeClient& client, const json& ia,
                             const std::string& type, const std::string& reason,
                             const std::string& message) {
  const json& meta = ia["metadata"];
  const std::string ns = meta.value("namespace", "");
  const absl::Time now = clock_.Now();
  const json ev = {{"apiVersion", "v1"},
                   {"kind", "Event"},
                   {"metadata",
                    {{"name", absl::StrCat(meta.value("name", ""), ".",
                                           absl::ToUnixNanos(now))},
                     {"namespace", ns}}},
                   {"involvedObject",
                    {{"apiVersion", "pilotlight.dev/v1alpha1"},
                     {"kind", "InferenceAutoscaler"},
                     {"name", meta.value("name", "")},
                     {"namespace", ns},
                     {"uid", meta.value("uid", "")}}},
                   {"reason", reason},
                   {"message", message.substr(0, 1024)},
                   {"type", type},
                   {"source", {{"component", "pilotlight-controller"}}},
                   {"reportingComponent", "pilotlight.dev/controller"},
                   {"reportingInstance", o_.election.identity},
                   {"firstTimestamp", Time(now)},
                   {"lastTimestamp", Time(now)},
                   {"count", 1}};
  absl::StatusOr<KubeClient::Response> r = client.Request(
      "POST", absl::StrCat("/api/v1/namespaces/", ns, "/events"), ev.dump());
  if (!r.ok()) {
    metrics_.api_errors.Increment();
    LogJson("warn", "event not recorded", {{"error", r.status().ToString()}});
  }
}

absl::Status Controller::Impl::Reconcile(const std::string& key,
                                         KubeClient& client) {
  kube::Informer::ObjectPtr ia = autoscalers_->Get(key);
  if (ia == nullptr) {
    // Deleted: forget it; its Deployments keep their replicas.
    const std::lock_guard<std::mutex> lock(endpoints_mu_);
    auto it = endpoints_.find(key);
    if (it != endpoints_.end()) {
      const std::vector<std::string> parts = absl::StrSplit(key, '/');
      for (const std::string& d : it->second->deployments) {
        const std::string dep = d.substr(d.find('/') + 1);
        metrics_.desired.Remove(&metrics_.desired.Add({{"namespace", parts[0]},
                                                       {"name", parts[1]},
                                                       {"deployment", dep}}));
        metrics_.ready.Remove(&metrics_.ready.Add({{"namespace", parts[0]},
                                                   {"name", parts[1]},
                                                   {"deployment", dep}}));
      }
      metrics_.cost.Remove(
          &metrics_.cost.Add({{"namespace", parts[0]}, {"name", parts[1]}}));
      endpoints_.erase(it);
      LogJson("info", "endpoint deleted; its Deployments keep their replicas",
              {{"endpoint", key}});
    }
    return absl::OkStatus();
  }
  Endpoint* e = nullptr;
  {
    const std::lock_guard<std::mutex> lock(endpoints_mu_);
    auto& slot = endpoints_[key];
    if (!slot) {
      slot = std::make_unique<Endpoint>(o_.decider);
    }
    e = slot.get();
  }
  const json& meta = (*ia)["metadata"];
  const std::string ns = meta.value("namespace", "");
  const std::string name = meta.value("name", "");
  const int64_t generation = meta.value("generation", int64_t{0});
  const absl::Time now = clock_.Now();

  // 1. The spec, against the GPUClasses it names (parsed once per change).
  const std::shared_ptr<const GpuClassSet> gpu = GpuClasses();
  const std::string& gpu_error = gpu->errors;
  const std::string version =
      absl::StrCat(meta.value("resourceVersion", ""), "|", gpu->generation);
  if (version != e->parsed_version) {
    e->parsed = api::ParseInferenceAutoscaler(*ia, gpu->classes);
    e->parsed_version = version;
    e->catalog.reset();
    e->gauges.clear();
    if (e->parsed.ok()) {
      std::map<std::string, api::GpuClassResource> used;
      for (const policy::VariantSpec& v : e->parsed->spec.variants) {
        used.emplace(v.gpu_class, gpu->classes.at(v.gpu_class));
      }
      absl::StatusOr<model::Catalog> catalog = api::CatalogOf(used);
      if (!catalog.ok()) {
        e->parsed = catalog.status();
      } else {
        e->catalog = std::make_unique<model::Catalog>(*std::move(catalog));
      }
    }
  }

  std::string not_ready_reason;
  std::string not_ready_message;
  std::vector<kube::Informer::ObjectPtr> deps;
  if (!e->parsed.ok()) {
    const bool missing_class =
        e->parsed.status().code() == absl::StatusCode::kNotFound;
    not_ready_reason = missing_class ? "GPUClassNotFound" : "InvalidSpec";
    not_ready_message = std::string(e->parsed.status().message());
    if (missing_class && !gpu_error.empty()) {
      absl::StrAppend(&not_ready_message, " (", gpu_error, ")");
    }
  } else {
    e->deployments.clear();
    const auto& variants = e->parsed->spec.variants;
    for (size_t i = 0; i < variants.size(); ++i) {
      const std::string dk = absl::StrCat(ns, "/", variants[i].deployment);
      e->deployments.push_back(dk);
      kube::Informer::ObjectPtr d = deployments_->Get(dk);
      if (d == nullptr && not_ready_reason.empty()) {
        not_ready_reason = "DeploymentNotFound";
        not_ready_message = absl::StrCat(
            "spec.variants[", i, "].deployment: Deployment ", dk, " not found");
      }
      deps.push_back(d);
    }
  }
  const bool leading = Leading();
  if (!not_ready_reason.empty()) {
    const bool changed = SetCondition(*e, "Ready", false, not_ready_reason,
                                      not_ready_message, now);
    if (changed && leading) {
      LogJson("warn", "endpoint not ready",
              {{"endpoint", key},
               {"reason", not_ready_reason},
               {"message", not_ready_message}});
      Event(client, *ia, "Warning", not_ready_reason, not_ready_message);
    }
    const json status = {{"observedGeneration", generation},
                         {"conditions", ConditionsJson(*e, generation)}};
    const std::string content = status.dump();
    if (leading && content != e->written) {
      PL_RETURN_IF_ERROR(WriteStatus(client, ns, name, status));
      e->written = content;
      e->status_key.clear();  // a valid status after this must be written
    }
    return absl::OkStatus();
  }

  // 2. Replica states and learned cold starts, per variant.
  const api::AutoscalerResource& a = *e->parsed;
  policy::Snapshot snap;
  snap.spec = &a.spec;
  snap.catalog = e->catalog.get();
  std::vector<std::vector<kube::Informer::ObjectPtr>> ready_pods(
      a.spec.variants.size());
  for (size_t i = 0; i < a.spec.variants.size(); ++i) {
    const json& d = *deps[i];
    policy::VariantState vs;
    vs.desired = IntField(d, {"spec", "replicas"});
    std::set<std::string> pod_keys;
    {
      const std::lock_guard<std::mutex> lock(index_mu_);
      auto it = deployment_pods_.find(e->deployments[i]);
      if (it != deployment_pods_.end()) {
        pod_keys = it->second;
      }
    }
    ColdStartLearner& learner = e->cold_start[e->deployments[i]];
    std::set<std::string> live;
    for (const std::string& pk : pod_keys) {
      kube::Informer::ObjectPtr p = pods_->Get(pk);
      if (p == nullptr) {
        continue;
      }
      live.insert(Field(*p, {"metadata", "uid"}).is_string()
                      ? Field(*p, {"metadata", "uid"}).get<std::string>()
                      : "");
      if (Field(*p, {"metadata", "deletionTimestamp"}).is_string()) {
        ++vs.terminating;
        continue;
      }
      if (std::optional<absl::Duration> cold = learner.Observe(*p)) {
        metrics_.cold_start
            .Add({{"gpu_class", a.spec.variants[i].gpu_class}},
                 prometheus::Histogram::BucketBoundaries{
                     1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600})
            .Observe(absl::ToDoubleSeconds(*cold));
      }
      if (ConditionTime(*p, "Ready")) {
        ++vs.ready;
        ready_pods[i].push_back(p);
      } else if (auto created =
                     ParseTime(Field(*p, {"metadata", "creationTimestamp"}))) {
        vs.starting.push_back(*created);
      }
    }
    learner.Forget(live);
    vs.cold_start = learner.Stats();
    snap.variants.push_back(std::move(vs));
    if (a.spec.variants[i].capacity == policy::CapacityType::kSpot) {
      // Spot health: pods taken away, and pods the pool cannot place.
      policy::SpotHealth h;
      h.gpu_class = a.spec.variants[i].gpu_class;
      {
        const std::lock_guard<std::mutex> lock(index_mu_);
        auto it = disrupted_.find(e->deployments[i]);
        if (it != disrupted_.end()) {
          h.last_preemption = it->second;
        }
      }
      for (const std::string& pk : pod_keys) {
        kube::Informer::ObjectPtr p = pods_->Get(pk);
        if (p != nullptr && Unschedulable(*p)) {
          h.last_failed_placement = now;  // failing to place as we speak
        }
      }
      if (h.last_preemption || h.last_failed_placement) {
        snap.spot.push_back(std::move(h));
      }
    }
  }

  // 3. Demand: one sample per Prometheus read, since the last decision.
  std::string missing;
  int64_t epoch = 0;
  {
    const std::lock_guard<std::mutex> lock(demand_mu_);
    epoch = demand_epoch_;
  }
  // Decide once per demand read (the policy's windows and rate limits
  // count decisions), or at once when the spec changed; a reconcile
  // prompted by a pod or Deployment event in between only refreshes the
  // status with the last decision.
  const bool new_demand = epoch != e->demand_epoch;
  if (new_demand) {
    policy::DemandSample s = Demand(a, ready_pods, now, missing);
    e->demand_epoch = epoch;
    e->missing = missing;
    if (s.in_flight || s.queued || s.arrivals) {
      e->pending.push_back(s);
    }
  }
  missing = e->missing;
  if (new_demand || !e->decision || e->decided_generation != generation) {
    snap.demand = e->pending;
    e->decision = e->decider.Decide(snap, now);
    e->decided_generation = generation;
    e->pending.clear();
    metrics_.decisions
        .Add({{"reason",
               std::string(policy::ScaleReasonName(e->decision->reason))}})
        .Increment();
  }
  const policy::Decision& d = *e->decision;

  // 4. Act (the leader only): patch the variants that differ.
  std::vector<std::string> scaled;
  if (d.valid && leading) {
    for (size_t i = 0; i < d.variants.size(); ++i) {
      const policy::VariantDecision& v = d.variants[i];
      if (v.replicas == snap.variants[i].desired) {
        continue;
      }
      absl::StatusOr<KubeClient::Response> r =
          client.Request("PATCH",
                         absl::StrCat("/apis/apps/v1/namespaces/", ns,
                                      "/deployments/", v.deployment, "/scale"),
                         json{{"spec", {{"replicas", v.replicas}}}}.dump(),
                         "application/merge-patch+json");
      if (!r.ok()) {
        return r.status();  // retried with back-off; nothing else changed
      }
      const std::string msg =
          absl::StrCat(v.deployment, ": ", snap.variants[i].desired, " -> ",
                       v.replicas, " (", v.message, ")");
      scaled.push_back(msg);
      LogJson("info", "scaled",
              {{"endpoint", key},
               {"deployment", v.deployment},
               {"from", snap.variants[i].desired},
               {"to", v.replicas},
               {"reason", policy::ScaleReasonName(v.reason)},
               {"message", v.message}});
      Event(client, *ia, "Normal",
            v.replicas == 0                         ? "ScaledToZero"
            : v.replicas > snap.variants[i].desired ? "ScaledUp"
                                                    : "ScaledDown",
            msg);
    }
  }

  // 5. Status: conditions, replicas, what was decided and why.
  SetCondition(*e, "Ready", true, "Reconciled", "", now);
  if (e->gauges.size() != a.spec.variants.size()) {  // cached: Add() hashes
    e->gauges.clear();
    for (const policy::VariantSpec& vs : a.spec.variants) {
      const prometheus::Labels labels = {
          {"namespace", ns}, {"name", name}, {"deployment", vs.deployment}};
      e->gauges.emplace_back(&metrics_.desired.Add(labels),
                             &metrics_.ready.Add(labels));
    }
    e->cost_gauge = &metrics_.cost.Add({{"namespace", ns}, {"name", name}});
  }
  int total_desired = 0;
  std::vector<int> desired(a.spec.variants.size());
  for (size_t i = 0; i < a.spec.variants.size(); ++i) {
    desired[i] = d.valid ? d.variants[i].replicas : snap.variants[i].desired;
    total_desired += desired[i];
    e->gauges[i].first->Set(desired[i]);
    e->gauges[i].second->Set(snap.variants[i].ready);
  }
  e->cost_gauge->Set(d.cost_per_hour);
  if (!missing.empty() && !d.valid) {
    SetCondition(*e, "Degraded", true, "MetricsUnavailable",
                 absl::StrCat("holding replicas: ", missing), now);
  } else if (!missing.empty()) {
    SetCondition(*e, "Degraded", true, "MetricsIncomplete", missing, now);
  } else {
    SetCondition(*e, "Degraded", false, "AsExpected", "", now);
  }
  SetCondition(*e, "ScaledToZero", total_desired == 0,
               total_desired == 0 ? "Idle" : "Serving",
               total_desired == 0 ? "every variant is at 0 replicas" : "", now);
  // The serving tier's learned cold start (the first variant on it).
  size_t tier_variant = a.spec.variants.size() - 1;
  for (size_t i = 0; i < a.spec.variants.size(); ++i) {
    if (a.spec.variants[i].gpu_class == d.tier) {
      tier_variant = i;
      break;
    }
  }
  const policy::ColdStartStats& cs = snap.variants[tier_variant].cold_start;

  // Most ticks change nothing a reader of the status would see: compare
  // the inputs first and build no JSON then (2,000 endpoints a tick).
  std::string inputs =
      absl::StrCat(generation, "|", d.tier, "|", d.warm_pool, "|",
                   absl::ToInt64Seconds(d.keep_alive), "|",
                   std::round(d.cost_per_hour * 1000), "|",
                   policy::ScaleReasonName(d.reason), "|", cs.samples, "|",
                   absl::ToInt64Milliseconds(cs.p90));
  for (size_t i = 0; i < desired.size(); ++i) {
    absl::StrAppend(&inputs, "|", desired[i], "/", snap.variants[i].ready);
  }
  for (const auto& [type, c] : e->conditions) {
    absl::StrAppend(&inputs, "|", type, "=", c.status, c.reason, "/",
                    c.message);
  }
  if (d.keep_alive_until) {
    absl::StrAppend(&inputs, "|", absl::ToUnixSeconds(*d.keep_alive_until));
  }
  if (inputs == e->status_key && scaled.empty()) {
    return absl::OkStatus();
  }

  json variants = json::array();
  int od_desired = 0;
  int od_ready = 0;
  int spot_desired = 0;
  int spot_ready = 0;
  for (size_t i = 0; i < a.spec.variants.size(); ++i) {
    const policy::VariantSpec& vs = a.spec.variants[i];
    const int ready = snap.variants[i].ready;
    const bool spot = vs.capacity == policy::CapacityType::kSpot;
    (spot ? spot_desired : od_desired) += desired[i];
    (spot ? spot_ready : od_ready) += ready;
    variants.push_back({{"deployment", vs.deployment},
                        {"gpuClass", vs.gpu_class},
                        {"capacityType", policy::CapacityTypeName(vs.capacity)},
                        {"desired", desired[i]},
                        {"ready", ready}});
  }
  json status = {
      {"observedGeneration", generation},
      {"variants", variants},
      {"replicas",
       {{"onDemand", absl::StrCat(od_ready, "/", od_desired)},
        {"spot", absl::StrCat(spot_ready, "/", spot_desired)}}},
      {"tier", d.tier},
      {"warmPool", d.warm_pool},
      {"keepAliveSeconds", absl::ToInt64Seconds(d.keep_alive)},
      {"costPerHour", std::round(d.cost_per_hour * 1000) / 1000},
      {"coldStart",
       {{"p50Seconds", absl::ToDoubleSeconds(cs.p50)},
        {"p90Seconds", absl::ToDoubleSeconds(cs.p90)},
        {"samples", cs.samples}}},
      {"conditions", ConditionsJson(*e, generation)},
      {"lastDecision",
       {{"time", Time(now)},
        {"reason", policy::ScaleReasonName(d.reason)},
        {"message", d.message.substr(0, 1024)}}},
  };
  if (d.keep_alive_until) {
    status["keepAliveUntil"] = Time(*d.keep_alive_until);
  }
  if (leading) {
    PL_RETURN_IF_ERROR(WriteStatus(client, ns, name, status));
    e->status_key = inputs;  // written: the next change writes again
    e->written.clear();      // and so must a not-ready status after it
  }
  return absl::OkStatus();
}

Controller::Controller(ControllerOptions options, const kube::Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}
Controller::~Controller() = default;

absl::Status Controller::Run(const std::atomic<bool>& stop) {
  return impl_->Run(stop);
}

int Controller::port() const { return impl_->port(); }

}  // namespace pilotlight::runtime
