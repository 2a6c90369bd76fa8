#include "controller/activator/activator.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "controller/activator/metrics.h"
#include "controller/cluster/cluster_index.h"
#include "controller/http/client_watch.h"
#include "controller/http/front_server.h"
#include "controller/kube/informer.h"
#include "controller/kube/throttle.h"
#include "controller/process/log.h"
#include "controller/process/real_clock.h"
#include "httplib.h"
#include "prometheus/text_serializer.h"

namespace pilotlight::activator {
namespace {

using json = nlohmann::json;
using kube::EventType;
using process::LogJson;

// The front's options from the activator's.
http::FrontServerOptions FrontOptions(const ActivatorOptions& o) {
  http::FrontServerOptions http;
  http.backlog = o.http.backlog;
  http.min_threads = o.http.min_threads;
  http.max_threads = o.http.max_threads;
  http.keep_alive = absl::Seconds(o.http.keep_alive_seconds);
  http.keep_alive_max_requests = o.http.keep_alive_max_requests;
  http.max_body_bytes = o.proxy.max_body_bytes;
  http.warn = [](const std::string& message) {
    process::LogJson("warn", message);
  };
  return http;
}

}  // namespace

class Activator::Impl {
 public:
  explicit Impl(const ActivatorOptions& o)
      : options_(o),
        throttle_(50, 100, clock_),
        metrics_(registry_),
        router_(o.hold,
                [this](const std::string& endpoint) {
                  if (reporter_ != nullptr) {
                    reporter_->Poke(endpoint);
                  }
                }),
        autoscalers_(
            Informer("/apis/pilotlight.dev/v1alpha1/inferenceautoscalers")),
        replicasets_(Informer("/apis/apps/v1/replicasets", kube::KeepMetadata)),
        pods_(Informer("/api/v1/pods")),
        targets_(o.targets, router_, *autoscalers_, *pods_, index_),
        waker_({},
               [this](const std::string& address) {
                 Waker::Neighbours out;
                 for (std::string& n : targets_.Neighbours(address)) {
                   if (router_.InFlightAt(n) == 0) {
                     out.idle.push_back(std::move(n));
                   } else {
                     ++out.busy;
                   }
                 }
                 return out;
               }),
        proxy_(
            o.proxy, router_,
            [this](const std::string& endpoint) {
              return targets_.TimeoutsOf(endpoint);
            },
            metrics_) {}

  absl::Status Run(const std::atomic<bool>& stop, std::atomic<int>& port,
                   std::atomic<int>& admin_port);

 private:
  std::unique_ptr<kube::Informer> Informer(
      const std::string& path, std::function<void(json&)> transform = nullptr) {
    kube::InformerOptions io;
    io.path = path;
    io.transform = std::move(transform);
    return std::make_unique<kube::Informer>(options_.kube, io, clock_,
                                            &throttle_);
  }
  bool Synced() const {
    return autoscalers_->Synced() && replicasets_->Synced() && pods_->Synced();
  }
  void Wire();
  absl::StatusOr<int> ServeAdmin(const std::string& host, int port);
  void FindControllers();
  void Drain();

  const ActivatorOptions& options_;
  process::RealClock clock_;
  kube::Throttle throttle_;
  prometheus::Registry registry_;
  Metrics metrics_;
  std::unique_ptr<DemandReporter> reporter_;
  Router router_;
  std::unique_ptr<kube::Informer> autoscalers_;
  std::unique_ptr<kube::Informer> replicasets_;
  std::unique_ptr<kube::Informer> pods_;
  cluster::ClusterIndex index_;
  Targets targets_;
  http::ClientWatch client_watch_;  // clients that hang up while held
  Waker waker_;  // engines asleep that requests meet (and their neighbours)
  Proxy proxy_;
  std::atomic<bool> draining_{false};
  httplib::Server admin_;
  std::unique_ptr<http::FrontServer> front_;
  std::vector<std::string> controllers_;  // found by label
};

// Endpoints and their pods (through ReplicaSets) -> Targets.
void Activator::Impl::Wire() {
  const auto changed = [this](const cluster::ClusterIndex::Keys& keys) {
    for (const std::string& k : keys) {
      targets_.Changed(k);
    }
  };
  autoscalers_->AddHandler([this, changed](EventType t, const json& ia) {
    changed(index_.OnAutoscaler(t, ia));
    if (t != EventType::kDeleted) {
      // Its series exist from now, at zero: its first request and first
      // cold start then show in rate() (a counter first seen at 1 does not).
      metrics_.Touch(kube::ObjectKey(ia));
    }
  });
  replicasets_->AddHandler([this, changed](EventType t, const json& rs) {
    changed(index_.OnReplicaSet(t, rs));
  });
  pods_->AddHandler([this, changed](EventType t, const json& p) {
    changed(index_.OnPod(t, p, clock_.Now()));
  });
}

// /healthz, /readyz (fails while draining), /metrics: a server of their
// own, so held requests and streams never starve them.
absl::StatusOr<int> Activator::Impl::ServeAdmin(const std::string& host,
                                                int port) {
  const std::shared_ptr<http::ListenSocket> socket =
      http::ConfigureHttpServer(admin_, {.backlog = 256, .max_threads = 16});
  admin_.Get("/healthz", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("ok\n", "text/plain");
  });
  admin_.Get("/readyz", [this](const httplib::Request&, httplib::Response& r) {
    const bool ready = Synced() && !draining_;
    r.status = ready ? 200 : 503;
    r.set_content(ready       ? "ok\n"
                  : draining_ ? "draining\n"
                              : "informers not synced\n",
                  "text/plain");
  });
  admin_.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
    for (const EndpointDemand& l : router_.Demand(absl::Now())) {
      const prometheus::Labels labels = {{"endpoint", l.endpoint}};
      metrics_.held.Add(labels).Set(l.held);
      metrics_.in_flight.Add(labels).Set(l.in_flight);
      metrics_.targets.Add(labels).Set(
          static_cast<double>(targets_.CountOf(l.endpoint)));
    }
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    r.set_content(out.str(), "text/plain; version=0.0.4");
  });
  return http::BindHttpServer(admin_, *socket, host, port, 256);
}

// The controller replicas by label, when no list was given.
void Activator::Impl::FindControllers() {
  std::vector<std::string> now = ControllerAddresses(
      *pods_, options_.controller_namespace, options_.controller_selector,
      options_.controller_port);
  if (now == controllers_) {
    return;
  }
  controllers_ = now;
  reporter_->SetControllers(controllers_);
  LogJson(controllers_.empty() ? "warn" : "info", "controllers",
          {{"addresses", absl::StrJoin(controllers_, ",")},
           {"selector", options_.controller_selector},
           {"namespace", options_.controller_namespace}});
}

// Unready first, keep serving while the Service catches up, then finish
// what is held and streaming; the controllers hear a goodbye.
void Activator::Impl::Drain() {
  draining_ = true;
  // Kept-alive clients move to the other activators now, while this one
  // still answers: each connection ends after its current response.
  front_->Drain();
  LogJson("info", "draining",
          {{"held", router_.held_total()},
           {"in_flight", router_.in_flight_total()}});
  absl::SleepFor(options_.drain_delay);
  router_.AwaitTotals(
      [](int held, int in_flight) { return held == 0 && in_flight == 0; },
      options_.drain_timeout);
  const int left = router_.held_total() + router_.in_flight_total();
  router_.Close();  // what is still held gets 503 now
  reporter_->Drain();
  LogJson(left > 0 ? "warn" : "info", "drained",
          {{"unfinished_requests", left}});
}

absl::Status Activator::Impl::Run(const std::atomic<bool>& stop,
                                  std::atomic<int>& port,
                                  std::atomic<int>& admin_port) {
  absl::StatusOr<std::pair<std::string, int>> front =
      SplitHostPort(options_.listen_address, "--listen");
  absl::StatusOr<std::pair<std::string, int>> admin =
      SplitHostPort(options_.admin_address, "--admin-listen");
  if (!front.ok() || !admin.ok()) {
    return front.ok() ? admin.status() : front.status();
  }
  absl::StatusOr<int> ap = ServeAdmin(admin->first, admin->second);
  if (!ap.ok()) {
    return ap.status();
  }
  admin_port = *ap;
  std::thread admin_thread([this] { admin_.listen_after_bind(); });
  proxy_.WatchClients(&client_watch_);
  proxy_.WakeEngines(&waker_);
  front_ = std::make_unique<http::FrontServer>(
      FrontOptions(options_),
      [this](const httplib::Request& req, httplib::Response& res,
             int client_socket) { proxy_.Handle(req, res, client_socket); },
      [this](const httplib::Request& req, uint64_t bytes,
             httplib::Response& res) { proxy_.TooLarge(req, bytes, res); });
  absl::StatusOr<int> fp = front_->Bind(front->first, front->second);
  if (!fp.ok()) {
    admin_.stop();
    admin_thread.join();
    return fp.status();
  }
  port = *fp;

  Wire();
  autoscalers_->Start();
  replicasets_->Start();
  pods_->Start();
  while (!stop && !Synced()) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  targets_.ChangedAll();
  targets_.Refresh();
  reporter_ =
      std::make_unique<DemandReporter>(options_.reporter, router_, metrics_);
  const bool discover = options_.reporter.controllers.empty();
  if (discover) {
    FindControllers();
  } else {
    reporter_->Start();
  }
  std::atomic<bool> stop_targets{false};
  std::thread targets_thread([&] { targets_.Run(stop_targets); });
  client_watch_.Start();
  std::thread front_thread([this] { front_->Serve(); });
  LogJson("info", "activator started",
          {{"port", port.load()},
           {"admin_port", admin_port.load()},
           {"controllers",
            discover ? absl::StrCat("pods ", options_.controller_selector,
                                    " in ", options_.controller_namespace)
                     : absl::StrJoin(options_.reporter.controllers, ",")},
           {"name", options_.reporter.name}});
  for (int i = 0; !stop; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    if (discover && i % 10 == 0) {
      FindControllers();
    }
  }

  Drain();
  front_->Stop();
  front_thread.join();
  client_watch_.Stop();
  stop_targets = true;
  targets_thread.join();
  reporter_.reset();
  admin_.stop();
  admin_thread.join();
  autoscalers_->Stop();
  replicasets_->Stop();
  pods_->Stop();
  LogJson("info", "activator stopped");
  return absl::OkStatus();
}

Activator::Activator(ActivatorOptions options) : options_(std::move(options)) {}
Activator::~Activator() = default;

absl::Status Activator::Run(const std::atomic<bool>& stop) {
  Impl impl(options_);
  return impl.Run(stop, port_, admin_port_);
}

}  // namespace pilotlight::activator
