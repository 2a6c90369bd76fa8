// Informer: a local, always-current copy of one kind of object, kept by
// list + watch as client-go's reflector does. It lists (paged), watches
// from the list's resourceVersion with bookmarks, re-watches from the last
// seen resourceVersion when a watch ends, relists when the server says that
// version is gone (410 / Expired) and after errors (with exponential
// back-off, 0.5 s to 30 s), and on a relist tells its handlers about
// objects that disappeared meanwhile as deletions: no change is missed.
//
// Objects are trimmed before they are cached (managedFields and the
// last-applied annotation: they are most of an object's bytes and no
// decision reads them). Handlers run on the informer's thread; keep them
// short (queue a key).
//
// Example:
//   Informer deployments(config, {.path = "/apis/apps/v1/deployments"}, clock);
//   deployments.AddHandler([&](EventType, const json& d) { queue.Add(Key(d));
//   }); deployments.Start();
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "controller/kube/clock.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/kube_config.h"
#include "controller/kube/throttle.h"
#include "nlohmann/json.hpp"

namespace pilotlight::kube {

struct InformerOptions {
  // The collection, e.g. "/apis/apps/v1/deployments" (all namespaces) or
  // "/api/v1/namespaces/ml/pods".
  std::string path;
  // Extra list/watch parameters, e.g. "labelSelector=app%3Dx" ("" none).
  std::string selector;
  int page_size = 500;
  absl::Duration watch_timeout = absl::Minutes(5);
  // Applied to every object before it is cached and handed to the handlers,
  // after TrimObject (e.g. keep only the metadata of ReplicaSets). Null:
  // none.
  std::function<void(nlohmann::json&)> transform;
};

enum class EventType { kAdded, kModified, kDeleted };

// "namespace/name", or "name" for cluster-scoped objects.
std::string ObjectKey(const nlohmann::json& object);

// Drops what no decision reads (managedFields, last-applied annotation).
void TrimObject(nlohmann::json& object);

// A transform for objects read for their metadata alone (e.g. ReplicaSets,
// read for their owner: the pod template is most of their bytes).
void KeepMetadata(nlohmann::json& object);

// Read access to a cache of one kind of object: what the reconciler needs
// of an informer, so tests can hand it a map instead.
class ObjectCache {
 public:
  using ObjectPtr = std::shared_ptr<const nlohmann::json>;
  virtual ~ObjectCache() = default;
  // Null when there is no object of that key.
  virtual ObjectPtr Get(const std::string& key) const = 0;
  virtual void ForEach(
      const std::function<void(const nlohmann::json&)>& f) const = 0;
};

class Informer final : public ObjectCache {
 public:
  using Handler = std::function<void(EventType, const nlohmann::json&)>;

  Informer(KubeConfig config, InformerOptions options, const Clock& clock,
           Throttle* throttle = nullptr);
  ~Informer() override;  // stops

  void AddHandler(Handler h);  // before Start
  void Start();
  void Stop();

  // True once the first list is in the cache.
  bool Synced() const { return synced_.load(); }
  ObjectPtr Get(const std::string& key) const override;
  void ForEach(
      const std::function<void(const nlohmann::json&)>& f) const override;
  size_t Size() const;

  struct Stats {
    int64_t lists = 0;
    int64_t watches = 0;
    int64_t expired = 0;  // 410 Gone -> relist
    int64_t errors = 0;
    int64_t events = 0;
  };
  Stats stats() const;
  std::string last_error() const;

 private:
  void Run();
  absl::Status List(std::string& resource_version);
  absl::Status WatchFrom(std::string& resource_version);
  void Apply(EventType type, nlohmann::json object);
  void Fail(const absl::Status& st);

  const KubeConfig config_;
  const InformerOptions options_;
  const Clock& clock_;
  Throttle* throttle_;
  std::vector<Handler> handlers_;
  std::unique_ptr<KubeClient> client_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  std::atomic<bool> running_{false};

  mutable std::mutex mu_;  // cache_, stats_, last_error_
  std::map<std::string, ObjectPtr> cache_;
  Stats stats_;
  std::string last_error_;
};

}  // namespace pilotlight::kube
