#include "tests/tools/load_generator/load_generator.h"

#include <httplib.h>

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "controller/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace pilotlight::tools {

using json = nlohmann::json;

struct LoadGenerator::Shared {
  std::mutex mu;
  std::vector<std::string> targets;  // "ip:port" of Ready pods
};

LoadGenerator::LoadGenerator(LoadOptions o)
    : options_(std::move(o)), shared_(std::make_unique<Shared>()) {}

LoadGenerator::~LoadGenerator() { Stop(); }

void LoadGenerator::Start() {
  stop_ = false;
  active_ = options_.concurrency;
  discovery_ = std::thread([this] { Discover(); });
  for (int i = 0; i < options_.concurrency; ++i) {
    workers_.emplace_back([this, i] { Work(i); });
  }
}

void LoadGenerator::SetConcurrency(int n) { active_ = n; }

void LoadGenerator::Stop() {
  stop_ = true;
  for (std::thread& w : workers_) {
    w.join();
  }
  workers_.clear();
  if (discovery_.joinable()) {
    discovery_.join();
  }
}

std::vector<std::string> LoadGenerator::Targets() {
  const std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->targets;
}

void LoadGenerator::Discover() {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> c =
      kube::KubeClient::Create(options_.kube);
  if (!c.ok()) {
    return;
  }
  const std::string path =
      absl::StrCat("/api/v1/namespaces/", options_.ns, "/pods?labelSelector=",
                   httplib::detail::encode_query_param(options_.selector));
  while (!stop_) {
    absl::StatusOr<kube::KubeClient::Response> r =
        (*c)->Request("GET", path, "");
    if (r.ok()) {
      const json list = json::parse(r->body, nullptr, false);
      std::vector<std::string> targets;
      if (list.is_object()) {
        for (const json& p : list.value("items", json::array())) {
          if (p["metadata"].contains("deletionTimestamp")) {
            continue;
          }
          bool ready = false;
          for (const json& cond :
               p["status"].value("conditions", json::array())) {
            ready = ready || (cond.value("type", "") == "Ready" &&
                              cond.value("status", "") == "True");
          }
          const std::string ip = p["status"].value("podIP", "");
          if (ready && !ip.empty()) {
            targets.push_back(absl::StrCat(ip, ":8000"));
          }
        }
      }
      pods_ = static_cast<int>(targets.size());
      const std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->targets = std::move(targets);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void LoadGenerator::Work(int id) {
  std::map<std::string, std::unique_ptr<httplib::Client>> clients;
  const std::string body = json{
      {"model", options_.model},
      {"prompt", "hello"},
      {"max_tokens",
       options_.max_tokens}}.dump();
  uint64_t n = static_cast<uint64_t>(id);
  bool counted_waiting = false;
  while (!stop_) {
    if (id >= active_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    const std::vector<std::string> targets = Targets();
    if (targets.empty()) {  // hold the request until a pod is Ready
      if (!counted_waiting) {
        ++waiting_;
        counted_waiting = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (counted_waiting) {
      --waiting_;
      counted_waiting = false;
    }
    const std::string& t = targets[n++ % targets.size()];
    auto& client = clients[t];
    if (!client) {
      client = std::make_unique<httplib::Client>(t);
      client->set_keep_alive(true);
      client->set_read_timeout(60, 0);
    }
    ++in_flight_;
    httplib::Result r =
        client->Post("/v1/completions", body, "application/json");
    --in_flight_;
    if (r && r->status == 200) {
      ++done_;
    } else {
      ++errors_;
      clients.erase(t);  // a pod that went away: reconnect elsewhere
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (counted_waiting) {
    --waiting_;
  }
}

}  // namespace pilotlight::tools
