#include "controller/kube/informer.h"

#include <algorithm>
#include <iostream>
#include <set>

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"

namespace pilotlight::kube {

using json = nlohmann::json;

std::string ObjectKey(const json& object) {
  // Wrongly typed fields read as missing: an object never throws here.
  const std::string name = StringField(object, {"metadata", "name"});
  const std::string ns = StringField(object, {"metadata", "namespace"});
  return ns.empty() ? name : absl::StrCat(ns, "/", name);
}

void KeepMetadata(json& object) {
  json meta = std::move(object["metadata"]);
  object = json::object();
  object["metadata"] = std::move(meta);
}

void TrimObject(json& object) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return;
  }
  meta->erase("managedFields");
  auto ann = meta->find("annotations");
  if (ann != meta->end() && ann->is_object()) {
    ann->erase("kubectl.kubernetes.io/last-applied-configuration");
  }
}

Informer::Informer(KubeConfig config, InformerOptions options,
                   const Clock& clock, Throttle* throttle)
    : config_(std::move(config)),
      options_(std::move(options)),
      clock_(clock),
      throttle_(throttle) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(Handler h) { handlers_.push_back(std::move(h)); }

void Informer::Start() {
  absl::StatusOr<std::unique_ptr<KubeClient>> c = KubeClient::Create(config_);
  if (!c.ok()) {
    Fail(c.status());
    return;
  }
  client_ = *std::move(c);
  client_->set_throttle(throttle_);
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this] {
    Run();
    running_ = false;
  });
}

void Informer::Stop() {
  stop_ = true;
  // Cancel until the thread is out: a cancel that lands between two
  // requests would otherwise leave the next one to run to its timeout.
  while (client_ && running_) {
    client_->Cancel();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

Informer::ObjectPtr Informer::Get(const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : it->second;
}

void Informer::ForEach(const std::function<void(const json&)>& f) const {
  std::vector<ObjectPtr> objects;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    objects.reserve(cache_.size());
    for (const auto& [key, obj] : cache_) {
      objects.push_back(obj);
    }
  }
  for (const ObjectPtr& o : objects) {
    f(*o);
  }
}

size_t Informer::Size() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

Informer::Stats Informer::stats() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string Informer::last_error() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void Informer::Fail(const absl::Status& st) {
  const std::lock_guard<std::mutex> lock(mu_);
  ++stats_.errors;
  last_error_ = absl::StrCat(options_.path, ": ", st.ToString());
}

void Informer::Apply(EventType type, json object) {
  TrimObject(object);
  if (options_.transform) {
    options_.transform(object);
  }
  const std::string key = ObjectKey(object);
  auto ptr = std::make_shared<const json>(std::move(object));
  {
    const std::lock_guard<std::mutex> lock(mu_);
    ++stats_.events;
    if (type == EventType::kDeleted) {
      cache_.erase(key);
    } else {
      cache_[key] = ptr;
    }
  }
  for (const Handler& h : handlers_) {
    h(type, *ptr);
  }
}

absl::Status Informer::List(std::string& resource_version) {
  std::map<std::string, json> fresh;
  std::string cont;
  do {
    std::string path =
        absl::StrCat(options_.path, "?limit=", options_.page_size);
    if (!options_.selector.empty()) {
      absl::StrAppend(&path, "&", options_.selector);
    }
    if (!cont.empty()) {
      absl::StrAppend(&path, "&continue=", cont);
    }
    absl::StatusOr<KubeClient::Response> r = client_->Request("GET", path, "");
    if (!r.ok()) {
      return r.status();
    }
    json page = json::parse(r->body, nullptr, false);
    if (!page.is_object() || !page.contains("items") ||
        !page["items"].is_array()) {
      return absl::DataLossError(
          absl::StrCat("list ", options_.path, ": not a list"));
    }
    for (json& item : page["items"]) {
      const std::string key = ObjectKey(item);
      fresh.emplace(key, std::move(item));
    }
    cont = StringField(page, {"metadata", "continue"});
    resource_version = StringField(page, {"metadata", "resourceVersion"});
  } while (!cont.empty() && !stop_);
  {
    const std::lock_guard<std::mutex> lock(mu_);
    ++stats_.lists;
  }
  // What vanished while we were not watching is a deletion.
  std::vector<ObjectPtr> gone;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, obj] : cache_) {
      if (fresh.count(key) == 0) {
        gone.push_back(obj);
      }
    }
  }
  for (const ObjectPtr& g : gone) {
    Apply(EventType::kDeleted, *g);
  }
  for (auto& [key, obj] : fresh) {
    const bool known = Get(key) != nullptr;
    Apply(known ? EventType::kModified : EventType::kAdded, std::move(obj));
  }
  synced_ = true;
  return absl::OkStatus();
}

absl::Status Informer::WatchFrom(std::string& resource_version) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    ++stats_.watches;
  }
  std::string path = absl::StrCat(
      options_.path, "?watch=true&allowWatchBookmarks=true&timeoutSeconds=",
      absl::ToInt64Seconds(options_.watch_timeout),
      "&resourceVersion=", resource_version);
  if (!options_.selector.empty()) {
    absl::StrAppend(&path, "&", options_.selector);
  }
  return client_->Watch(path, [&](WatchEvent e) {
    if (stop_) {
      return false;
    }
    const auto meta = e.object.find("metadata");
    if (meta != e.object.end() && meta->is_object()) {
      resource_version = meta->value("resourceVersion", resource_version);
    }
    if (e.type == "ADDED") {
      Apply(EventType::kAdded, std::move(e.object));
    } else if (e.type == "MODIFIED") {
      Apply(EventType::kModified, std::move(e.object));
    } else if (e.type == "DELETED") {
      Apply(EventType::kDeleted, std::move(e.object));
    }  // BOOKMARK: only the resourceVersion
    return !stop_.load();
  });
}

void Informer::Run() {
  absl::Duration backoff = absl::Milliseconds(500);
  bool need_list = true;
  std::string rv;
  while (!stop_) {
    absl::Status st = absl::OkStatus();
    if (need_list) {
      st = List(rv);
      need_list = !st.ok();
    }
    if (st.ok()) {
      st = WatchFrom(rv);
    }
    if (stop_) {
      break;
    }
    if (st.ok()) {  // the server ended the watch: carry on from rv
      backoff = absl::Milliseconds(500);
      continue;
    }
    if (st.code() == absl::StatusCode::kOutOfRange) {
      // 410 Gone: our resourceVersion is too old; relist at once.
      const std::lock_guard<std::mutex> lock(mu_);
      ++stats_.expired;
      need_list = true;
      continue;
    }
    Fail(st);
    // The API server may have restarted and lost our resourceVersion, or
    // be gone for a while: back off, then relist (a relist is what cannot
    // miss a change).
    need_list = true;
    for (absl::Duration slept; slept < backoff && !stop_;
         slept += absl::Milliseconds(100)) {
      clock_.SleepFor(absl::Milliseconds(100));
    }
    backoff = std::min(backoff * 2, absl::Seconds(30));
  }
}

}  // namespace pilotlight::kube
