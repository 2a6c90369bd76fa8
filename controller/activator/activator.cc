#include "controller/activator/activator.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/activator/metrics.h"
#include "controller/base/json_fields.h"
#include "controller/kube/informer.h"
#include "controller/kube/throttle.h"
#include "controller/runtime/cluster_index.h"
#include "controller/runtime/log.h"
#include "controller/runtime/pod_facts.h"
#include "controller/runtime/real_clock.h"
#include "httplib.h"
#include "prometheus/text_serializer.h"

namespace pilotlight::activator {
namespace {

using json = nlohmann::json;
using kube::EventType;
using runtime::LogJson;

void KeepMetadata(json& object) {
  json meta = std::move(object["metadata"]);
  object = json::object();
  object["metadata"] = std::move(meta);
}

}  // namespace

Activator::Activator(ActivatorOptions options) : o_(std::move(options)) {}
Activator::~Activator() = default;

absl::Status Activator::Run(const std::atomic<bool>& stop) {
  absl::StatusOr<std::pair<std::string, int>> front =
      SplitHostPort(o_.listen_address, "--listen");
  absl::StatusOr<std::pair<std::string, int>> admin =
      SplitHostPort(o_.admin_address, "--admin-listen");
  if (!front.ok()) {
    return front.status();
  }
  if (!admin.ok()) {
    return admin.status();
  }
  runtime::RealClock clock;
  prometheus::Registry registry;
  Metrics metrics(registry);
  std::unique_ptr<DemandReporter> reporter;
  Router router(o_.hold, [&](const std::string& endpoint) {
    if (reporter != nullptr) {
      reporter->Poke(endpoint);
    }
  });

  // The caches: endpoints, and their pods through ReplicaSets.
  kube::Throttle throttle(50, 100, clock);
  const auto informer = [&](const std::string& path,
                            std::function<void(json&)> transform = nullptr) {
    kube::InformerOptions io;
    io.path = path;
    io.transform = std::move(transform);
    return std::make_unique<kube::Informer>(o_.kube, io, clock, &throttle);
  };
  auto autoscalers =
      informer("/apis/pilotlight.dev/v1alpha1/inferenceautoscalers");
  auto replicasets = informer("/apis/apps/v1/replicasets", KeepMetadata);
  auto pods = informer("/api/v1/pods");
  runtime::ClusterIndex index;
  Targets targets(o_.targets, router, *autoscalers, *pods, index);
  const auto changed = [&](const runtime::ClusterIndex::Keys& keys) {
    for (const std::string& k : keys) {
      targets.Changed(k);
    }
  };
  autoscalers->AddHandler(
      [&](EventType t, const json& ia) { changed(index.OnAutoscaler(t, ia)); });
  replicasets->AddHandler(
      [&](EventType t, const json& rs) { changed(index.OnReplicaSet(t, rs)); });
  pods->AddHandler([&](EventType t, const json& p) {
    changed(index.OnPod(t, p, clock.Now()));
  });

  // Admin: its own server and threads.
  std::atomic<bool> draining{false};
  httplib::Server admin_http;
  const std::shared_ptr<ListenSocket> admin_socket =
      ConfigureHttpServer(admin_http, {.backlog = 256, .max_threads = 16});
  admin_http.Get("/healthz", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("ok\n", "text/plain");
  });
  admin_http.Get("/readyz", [&](const httplib::Request&, httplib::Response& r) {
    const bool synced =
        autoscalers->Synced() && pods->Synced() && replicasets->Synced();
    const bool ready = synced && !draining;
    r.status = ready ? 200 : 503;
    r.set_content(ready      ? "ok\n"
                  : draining ? "draining\n"
                             : "informers not synced\n",
                  "text/plain");
  });
  admin_http.Get(
      "/metrics", [&](const httplib::Request&, httplib::Response& r) {
        for (const EndpointLoad& l : router.Demand(absl::Now())) {
          const prometheus::Labels labels = {{"endpoint", l.endpoint}};
          metrics.held.Add(labels).Set(l.held);
          metrics.in_flight.Add(labels).Set(l.in_flight);
          metrics.targets.Add(labels).Set(
              static_cast<double>(targets.CountOf(l.endpoint)));
        }
        std::ostringstream out;
        prometheus::TextSerializer().Serialize(out, registry.Collect());
        r.set_content(out.str(), "text/plain; version=0.0.4");
      });
  absl::StatusOr<int> ap = BindHttpServer(admin_http, *admin_socket,
                                          admin->first, admin->second, 256);
  if (!ap.ok()) {
    return ap.status();
  }
  admin_port_ = *ap;
  std::thread admin_thread([&] { admin_http.listen_after_bind(); });

  // The front.
  httplib::Server http;
  const std::shared_ptr<ListenSocket> socket =
      ConfigureHttpServer(http, o_.http);
  http.set_payload_max_length(o_.proxy.max_body_bytes + 1);
  Proxy proxy(
      o_.proxy, router,
      [&](const std::string& endpoint) { return targets.TimeoutsOf(endpoint); },
      metrics);
  proxy.Install(http);
  absl::StatusOr<int> fp = BindHttpServer(http, *socket, front->first,
                                          front->second, o_.http.backlog);
  if (!fp.ok()) {
    admin_http.stop();
    admin_thread.join();
    return fp.status();
  }
  port_ = *fp;

  autoscalers->Start();
  replicasets->Start();
  pods->Start();
  while (!stop &&
         !(autoscalers->Synced() && replicasets->Synced() && pods->Synced())) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  targets.ChangedAll();
  targets.Refresh();
  reporter = std::make_unique<DemandReporter>(o_.reporter, router, metrics);
  const bool discover = o_.reporter.controllers.empty();
  std::vector<std::string> controllers;
  const auto find_controllers = [&] {
    std::vector<std::string> now =
        ControllerAddresses(*pods, o_.controller_namespace,
                            o_.controller_selector, o_.controller_port);
    if (now != controllers) {
      controllers = now;
      reporter->SetControllers(controllers);
      LogJson(controllers.empty() ? "warn" : "info", "controllers",
              {{"addresses", absl::StrJoin(controllers, ",")},
               {"selector", o_.controller_selector},
               {"namespace", o_.controller_namespace}});
    }
  };
  if (discover) {
    find_controllers();
  } else {
    reporter->Start();
  }
  std::atomic<bool> stop_targets{false};
  std::thread targets_thread([&] { targets.Run(stop_targets); });
  std::thread http_thread([&] { http.listen_after_bind(); });
  LogJson(
      "info", "activator started",
      {{"port", port_.load()},
       {"admin_port", admin_port_.load()},
       {"controllers", discover ? absl::StrCat("pods ", o_.controller_selector,
                                               " in ", o_.controller_namespace)
                                : absl::StrJoin(o_.reporter.controllers, ",")},
       {"name", o_.reporter.name}});

  for (int i = 0; !stop; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    if (discover && i % 10 == 0) {
      find_controllers();
    }
  }

  // Drain: unready first, keep serving while the Service catches up, then
  // finish what is held and streaming.
  draining = true;
  LogJson(
      "info", "draining",
      {{"held", router.held_total()}, {"in_flight", router.in_flight_total()}});
  absl::SleepFor(o_.drain_delay);
  const absl::Time until = absl::Now() + o_.drain_timeout;
  while ((router.held_total() > 0 || router.in_flight_total() > 0) &&
         absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  const int left = router.held_total() + router.in_flight_total();
  router.Close();  // what is still held gets 503 now
  reporter->Drain();
  http.stop();
  http_thread.join();
  stop_targets = true;
  targets_thread.join();
  reporter.reset();
  admin_http.stop();
  admin_thread.join();
  autoscalers->Stop();
  replicasets->Stop();
  pods->Stop();
  LogJson(left > 0 ? "warn" : "info", "activator stopped",
          {{"unfinished_requests", left}});
  return absl::OkStatus();
}

}  // namespace pilotlight::activator
