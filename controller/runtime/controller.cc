#include "controller/runtime/controller.h"

#include <httplib.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/api/demand_service.h"
#include "controller/api/keda_scaler.h"
#include "controller/base/host_port.h"
#include "controller/cluster/cluster_index.h"
#include "controller/kube/informer.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/throttle.h"
#include "controller/kube/work_queue.h"
#include "controller/process/log.h"
#include "controller/process/thread_cpu.h"
#include "controller/runtime/activator_demand.h"
#include "controller/runtime/counterfactuals.h"
#include "controller/runtime/gpu_class_cache.h"
#include "controller/runtime/kube_writers.h"
#include "controller/runtime/merged_demand.h"
#include "controller/runtime/metrics.h"
#include "controller/runtime/pool_engines.h"
#include "controller/runtime/prom_demand.h"
#include "controller/runtime/reconciler.h"
#include "grpcpp/server_builder.h"
#include "prometheus/text_serializer.h"

namespace pilotlight::runtime {
namespace {

using json = nlohmann::json;
using kube::EventType;
using kube::KubeClient;

constexpr char kGroupPath[] = "/apis/pilotlight.dev/v1alpha1";

// Remembers when a reconcile's first /scale patch was accepted (for the
// poke -> patch latency: the status write and Event that follow it in the
// same reconcile are not part of it); forwards to the real patcher.
class PatchWatcher final : public ReplicaPatcher {
 public:
  PatchWatcher(ReplicaPatcher& real, const kube::Clock& clock)
      : real_(real), clock_(clock) {}
  absl::Status Scale(const std::string& ns, const std::string& deployment,
                     int32_t replicas) override {
    absl::Status st = real_.Scale(ns, deployment, replicas);
    if (st.ok() && !patched_at_) {
      patched_at_ = clock_.Now();
    }
    return st;
  }
  absl::Status SetDeletionCost(const std::string& ns, const std::string& pod,
                               int32_t cost) override {
    return real_.SetDeletionCost(ns, pod, cost);
  }
  absl::Status GuardFromDisruption(const std::string& ns,
                                   const std::string& pod,
                                   bool guard) override {
    return real_.GuardFromDisruption(ns, pod, guard);
  }
  absl::Status MarkLeaving(const std::string& ns, const std::string& pod,
                           const std::string& note) override {
    return real_.MarkLeaving(ns, pod, note);
  }
  std::optional<absl::Time> TakePatched() {
    return std::exchange(patched_at_, std::nullopt);
  }

 private:
  ReplicaPatcher& real_;
  const kube::Clock& clock_;
  std::optional<absl::Time> patched_at_;
};

}  // namespace

class Controller::Impl : public api::DemandReceiver {
 public:
  Impl(ControllerOptions o, const kube::Clock& clock)
      : options_(std::move(o)),
        clock_(clock),
        throttle_(options_.qps, options_.burst, clock_),
        queue_(clock_),
        metrics_(registry_) {}

  absl::Status Run(const std::atomic<bool>& stop);
  int port() const { return port_.load(); }
  int grpc_port() const { return grpc_port_.load(); }

  // api::DemandReceiver: the activators' reports.
  void Apply(const api::ActivatorReport& report) override {
    metrics_.activator_reports.Increment();
    for (const std::string& key : activator_demand_->Apply(report)) {
      metrics_.pokes.Increment();
      queue_.Add(key);
    }
    metrics_.activators.Set(activator_demand_->Connected());
  }
  void Disconnected(const std::string& activator, int64_t incarnation,
                    bool clean) override {
    activator_demand_->Disconnected(activator, incarnation, clean);
    metrics_.activators.Set(activator_demand_->Connected());
    process::LogJson(clean ? "info" : "warn",
                     clean ? "activator left" : "activator stream lost",
                     {{"activator", activator}});
  }
  bool Leading() const override {
    return !options_.leader_elect || leading_.load();
  }

 private:
  std::unique_ptr<kube::Informer> MakeInformer(
      const std::string& path, std::function<void(json&)> transform = nullptr) {
    kube::InformerOptions io;
    io.path = path;
    io.transform = std::move(transform);
    auto i =
        std::make_unique<kube::Informer>(options_.kube, io, clock_, &throttle_);
    informers_.push_back(i.get());
    return i;
  }
  void Enqueue(const cluster::ClusterIndex::Keys& keys) {
    for (const std::string& k : keys) {
      queue_.Add(k);
    }
  }
  void EnqueueAll() {
    autoscalers_->ForEach(
        [this](const json& ia) { queue_.Add(kube::ObjectKey(ia)); });
  }
  bool Synced() const {
    return std::all_of(informers_.begin(), informers_.end(),
                       [](const kube::Informer* i) { return i->Synced(); });
  }
  void Wire();
  absl::Status ServeHttp(httplib::Server& http, std::thread& thread);
  absl::Status ServeGrpc();
  // The KEDA scaler's view: each variant's last decided replicas.
  absl::StatusOr<api::KedaScaler::Variants> DecidedReplicas(
      const std::string& endpoint) const;
  void WaitForSync(const std::atomic<bool>& stop);
  void Elect(const std::atomic<bool>& stop, KubeClient& client);
  void TickLoop(const std::atomic<bool>& stop);
  void ReadDemand();
  void Worker();

  ControllerOptions options_;
  const kube::Clock& clock_;
  kube::Throttle throttle_;
  kube::WorkQueue queue_;
  prometheus::Registry registry_;
  Metrics metrics_;
  std::atomic<int> port_{0};
  std::atomic<int> grpc_port_{0};
  std::atomic<bool> leading_{false};
  std::atomic<bool> wired_{false};

  std::vector<kube::Informer*> informers_;
  std::unique_ptr<kube::Informer> autoscalers_;
  std::unique_ptr<kube::Informer> gpu_class_objects_;
  std::unique_ptr<kube::Informer> deployments_;
  std::unique_ptr<kube::Informer> replicasets_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<prom::PromClient> prom_;
  std::unique_ptr<PromDemand> demand_;
  std::unique_ptr<ActivatorDemand> activator_demand_;
  std::unique_ptr<MergedDemand> merged_demand_;
  std::unique_ptr<api::DemandService> demand_service_;
  std::unique_ptr<api::KedaScaler> keda_scaler_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<GpuClassCache> gpu_classes_;
  cluster::ClusterIndex index_{options_.notice_taints};
  // Before the reconciler, which points to it: gone after it.
  std::unique_ptr<CounterfactualReplayer> counterfactuals_;
  // Endpoints' engines in their sleep pools, seen and steered off the
  // reconciling threads (its own thread, from Run).
  HttpEngineClient engine_client_;
  std::unique_ptr<PoolEngines> pool_engines_;
  std::unique_ptr<Reconciler> reconciler_;

  std::atomic<double> tick_cpu_acc_{0};
  std::atomic<int64_t> tick_reconciles_{0};
};

// Informer events -> the index -> the work queue.
void Controller::Impl::Wire() {
  autoscalers_ =
      MakeInformer(absl::StrCat(kGroupPath, "/inferenceautoscalers"));
  gpu_class_objects_ = MakeInformer(absl::StrCat(kGroupPath, "/gpuclasses"));
  deployments_ = MakeInformer("/apis/apps/v1/deployments");
  replicasets_ = MakeInformer("/apis/apps/v1/replicasets", kube::KeepMetadata);
  pods_ = MakeInformer("/api/v1/pods");
  nodes_ = MakeInformer("/api/v1/nodes");
  gpu_classes_ = std::make_unique<GpuClassCache>(*gpu_class_objects_);
  reconciler_ = std::make_unique<Reconciler>(
      options_.decider,
      ReconcilerInputs{*autoscalers_, *deployments_, *pods_, index_,
                       *gpu_classes_, *merged_demand_},
      clock_, metrics_, options_.policy);
  reconciler_->set_decision_log(options_.decision_log);
  if (options_.counterfactual_every > absl::ZeroDuration()) {
    CounterfactualOptions c;
    c.every = options_.counterfactual_every;
    c.cpu_budget = options_.counterfactual_cpu;
    c.on_replay = [this](double cpu) {
      metrics_.counterfactual_replays.Increment();
      metrics_.counterfactual_cpu.Increment(cpu);
    };
    counterfactuals_ = std::make_unique<CounterfactualReplayer>(c);
    reconciler_->set_counterfactuals(counterfactuals_.get());
  }
  pool_engines_ = std::make_unique<PoolEngines>(
      engine_client_,
      [this](const std::string& address, const absl::Status& st) {
        metrics_.pool_engine_sleeps.Add({{"result", st.ok() ? "ok" : "failed"}})
            .Increment();
        process::LogJson(
            st.ok() ? "info" : "warn",
            st.ok() ? "pool engine put to sleep" : "pool engine did not sleep",
            {{"engine", address}, {"error", st.ok() ? "" : st.ToString()}});
      });
  reconciler_->set_pool_engines(pool_engines_.get());

  autoscalers_->AddHandler([this](EventType t, const json& ia) {
    Enqueue(index_.OnAutoscaler(t, ia));
  });
  gpu_class_objects_->AddHandler([this](EventType, const json&) {
    gpu_classes_->Changed();
    EnqueueAll();
  });
  deployments_->AddHandler([this](EventType t, const json& d) {
    Enqueue(index_.OnDeployment(t, d));
  });
  replicasets_->AddHandler([this](EventType t, const json& rs) {
    Enqueue(index_.OnReplicaSet(t, rs));
  });
  pods_->AddHandler([this](EventType t, const json& p) {
    Enqueue(index_.OnPod(t, p, clock_.Now()));
  });
  nodes_->AddHandler([this](EventType t, const json& n) {
    Enqueue(index_.OnNode(t, n, clock_.Now()));
  });
}

// /metrics, /healthz, /readyz. First of all: a port in use is a start-up
// error.
absl::Status Controller::Impl::ServeHttp(httplib::Server& http,
                                         std::thread& thread) {
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
    const bool synced = !informers_.empty() && Synced();
    r.status = synced ? 200 : 503;
    r.set_content(synced ? "ok\n" : "informers not synced\n", "text/plain");
  });
  if (options_.listen_address.empty()) {
    return absl::OkStatus();
  }
  const absl::StatusOr<std::pair<std::string, int>> address =
      SplitHostPort(options_.listen_address, "--listen");
  if (!address.ok()) {
    return address.status();
  }
  const auto& [host, p] = *address;
  port_ = p == 0 ? http.bind_to_any_port(host)
                 : (http.bind_to_port(host, p) ? p : -1);
  if (port_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.listen_address));
  }
  thread = std::thread([&http] { http.listen_after_bind(); });
  return absl::OkStatus();
}

// The activators' demand stream. Every replica serves it (leading or not),
// so demand is already here when a standby takes over.
absl::Status Controller::Impl::ServeGrpc() {
  // No demand service, no activators: nothing to wait for after start.
  activator_demand_ = std::make_unique<ActivatorDemand>(
      clock_,
      options_.grpc_address.empty() ? absl::ZeroDuration()
                                    : options_.activator_startup_grace,
      options_.activator_forget_after);
  if (options_.grpc_address.empty()) {
    return absl::OkStatus();
  }
  demand_service_ = std::make_unique<api::DemandService>(*this);
  keda_scaler_ =
      std::make_unique<api::KedaScaler>([this](const std::string& endpoint) {
        return DecidedReplicas(endpoint);
      });
  int port = 0;
  grpc::ServerBuilder b;
  b.AddListeningPort(options_.grpc_address, grpc::InsecureServerCredentials(),
                     &port);
  b.RegisterService(demand_service_.get());
  b.RegisterService(keda_scaler_.get());
  grpc_ = b.BuildAndStart();
  if (grpc_ == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve gRPC on ", options_.grpc_address));
  }
  grpc_port_ = port;
  return absl::OkStatus();
}

absl::StatusOr<api::KedaScaler::Variants> Controller::Impl::DecidedReplicas(
    const std::string& endpoint) const {
  if (!wired_ || !Synced()) {
    return absl::UnavailableError("the controller is starting");
  }
  if (autoscalers_->Get(endpoint) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no InferenceAutoscaler ", endpoint));
  }
  const std::optional<policy::Decision> d = reconciler_->LastDecision(endpoint);
  if (!d || d->variants.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("InferenceAutoscaler ", endpoint, " is not decided yet"));
  }
  api::KedaScaler::Variants out;
  for (const policy::VariantDecision& v : d->variants) {
    out.emplace_back(v.deployment, v.replicas);
  }
  return out;
}

// Nothing is decided from a half-filled cache (a Deployment not listed yet
// is not a missing Deployment).
void Controller::Impl::WaitForSync(const std::atomic<bool>& stop) {
  for (absl::Time waited_since = clock_.Now(); !stop && !Synced();) {
    clock_.SleepFor(absl::Milliseconds(50));
    if (clock_.Now() - waited_since > absl::Seconds(10)) {
      waited_since = clock_.Now();
      std::string errors;
      for (const kube::Informer* i : informers_) {
        if (!i->Synced()) {
          absl::StrAppend(&errors, i->last_error(), "; ");
        }
      }
      process::LogJson("warn", "waiting for the informers to sync",
                       {{"errors", errors}});
    }
  }
}

void Controller::Impl::Elect(const std::atomic<bool>& stop,
                             KubeClient& client) {
  kube::LeaderElector elector(client, options_.election, clock_);
  elector.Run(
      stop,
      [&] {
        leading_ = true;
        metrics_.leader.Set(1);
        process::LogJson("info", "leading",
                         {{"identity", options_.election.identity}});
        EnqueueAll();
      },
      [&] {
        leading_ = false;
        metrics_.leader.Set(0);
        process::LogJson("warn", "stopped leading",
                         {{"identity", options_.election.identity}});
      });
}

absl::Status Controller::Impl::Run(const std::atomic<bool>& stop) {
  absl::StatusOr<std::unique_ptr<prom::PromClient>> prom =
      prom::PromClient::Create(options_.prometheus_url,
                               options_.prometheus_timeout);
  if (!prom.ok()) {
    return prom.status();
  }
  prom_ = *std::move(prom);
  if (options_.leader_elect) {
    if (absl::Status st = kube::ValidateLeaderElectionConfig(options_.election);
        !st.ok()) {
      return st;
    }
  }
  httplib::Server http;
  std::thread http_thread;
  if (absl::Status st = ServeHttp(http, http_thread); !st.ok()) {
    return st;
  }
  if (absl::Status st = ServeGrpc(); !st.ok()) {
    http.stop();
    http_thread.join();
    return st;
  }
  demand_ =
      std::make_unique<PromDemand>(*prom_, options_.rate_window, options_.tick);
  merged_demand_ = std::make_unique<MergedDemand>(*demand_, *activator_demand_);
  Wire();
  wired_ = true;  // the KEDA scaler may read the caches
  for (kube::Informer* i : informers_) {
    i->Start();
  }
  WaitForSync(stop);
  std::atomic<bool> stop_election{false};
  std::thread election;
  std::unique_ptr<KubeClient> election_client;
  if (options_.leader_elect) {
    absl::StatusOr<std::unique_ptr<KubeClient>> c =
        KubeClient::Create(options_.kube);
    if (!c.ok()) {
      return c.status();
    }
    election_client = *std::move(c);
    election = std::thread([&] { Elect(stop_election, *election_client); });
  } else {
    metrics_.leader.Set(1);
  }
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers.emplace_back([this] { Worker(); });
  }
  std::thread pool_thread(
      [this, &stop] { pool_engines_->Run(stop, absl::Seconds(1)); });
  process::LogJson("info", "controller started",
                   {{"prometheus", options_.prometheus_url},
                    {"tick_seconds", absl::ToDoubleSeconds(options_.tick)},
                    {"leader_election", options_.leader_elect},
                    {"metrics_port", port_.load()},
                    {"grpc_port", grpc_port_.load()}});
  TickLoop(stop);

  queue_.ShutDown();
  for (std::thread& w : workers) {
    w.join();
  }
  pool_thread.join();
  stop_election = true;
  if (election.joinable()) {
    election.join();
  }
  for (kube::Informer* i : informers_) {
    i->Stop();
  }
  if (grpc_ != nullptr) {
    keda_scaler_->Shutdown();  // its streams end
    grpc_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
  http.stop();
  if (http_thread.joinable()) {
    http_thread.join();
  }
  process::LogJson("info", "controller stopped");
  return absl::OkStatus();
}

void Controller::Impl::TickLoop(const std::atomic<bool>& stop) {
  absl::Time next = clock_.Now();
  while (!stop) {
    if (clock_.Now() < next) {
      clock_.SleepFor(std::min(absl::Milliseconds(50), next - clock_.Now()));
      continue;
    }
    next += options_.tick;
    if (next < clock_.Now()) {
      next = clock_.Now() + options_.tick;  // fell behind: do not burst
    }
    if (!Synced()) {
      continue;
    }
    // The last tick's reconciles are done or still queued; report them.
    metrics_.tick_cpu.Set(tick_cpu_acc_.exchange(0));
    metrics_.tick_endpoints.Set(
        static_cast<double>(tick_reconciles_.exchange(0)));
    ReadDemand();
    EnqueueAll();
  }
}

// One batched Prometheus read per tick, whatever the number of endpoints.
void Controller::Impl::ReadDemand() {
  const PromDemand::RefreshStats stats =
      demand_->Refresh(*autoscalers_, clock_.Now());
  metrics_.prom_queries.Increment(static_cast<double>(stats.queries));
  metrics_.prom_queries_per_tick.Set(static_cast<double>(stats.queries));
  for (const auto& [query, error] : stats.errors) {
    metrics_.prom_errors.Increment();
    process::LogJson("warn", "prometheus query failed",
                     {{"query", query}, {"error", error}});
  }
}

void Controller::Impl::Worker() {
  absl::StatusOr<std::unique_ptr<KubeClient>> c =
      KubeClient::Create(options_.kube);
  if (!c.ok()) {
    process::LogJson("error", "worker has no API client",
                     {{"error", c.status().ToString()}});
    return;
  }
  KubeClient& client = **c;
  client.set_throttle(&throttle_);
  KubeWriters kube_writers(client, options_.election.identity, clock_,
                           [this] { metrics_.api_errors.Increment(); });
  const Writers real = kube_writers.writers();
  PatchWatcher patcher(real.patcher, clock_);
  Writers writers{patcher, real.status, real.events};
  while (std::optional<std::string> key = queue_.Get()) {
    const double cpu0 = process::ThreadCpuSeconds();
    const absl::Time t0 = absl::Now();
    const absl::Status st = reconciler_->Reconcile(*key, writers, Leading());
    metrics_.reconcile.Observe(absl::ToDoubleSeconds(absl::Now() - t0));
    if (keda_scaler_ != nullptr) {
      keda_scaler_->Changed(*key);  // its streams look at the decision
    }
    const std::optional<absl::Time> patched = patcher.TakePatched();
    if (const std::optional<absl::Time> poked =
            activator_demand_->TakePoke(*key);
        poked && patched) {
      metrics_.poke_to_patch.Observe(absl::ToDoubleSeconds(*patched - *poked));
    }
    const double cpu = process::ThreadCpuSeconds() - cpu0;
    double cur = tick_cpu_acc_.load();
    while (!tick_cpu_acc_.compare_exchange_weak(cur, cur + cpu)) {
    }
    ++tick_reconciles_;
    if (st.ok()) {
      queue_.Forget(*key);
    } else {
      metrics_.api_errors.Increment();
      process::LogJson("warn", "reconcile failed; retrying",
                       {{"endpoint", *key},
                        {"error", st.ToString()},
                        {"failures", queue_.Failures(*key) + 1}});
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

Controller::Controller(ControllerOptions options, const kube::Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}
Controller::~Controller() = default;

absl::Status Controller::Run(const std::atomic<bool>& stop) {
  return impl_->Run(stop);
}

int Controller::port() const { return impl_->port(); }
int Controller::grpc_port() const { return impl_->grpc_port(); }

}  // namespace pilotlight::runtime
