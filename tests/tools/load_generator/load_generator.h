// LoadGenerator: closed-loop load against the model-server pods of one
// endpoint on the local test cluster. `concurrency` workers each send
// /v1/completions requests back to back to the Ready pods matching a label
// selector (found through the API server every 500 ms, spread round-robin,
// connections kept alive). While no pod is Ready a worker's request waits,
// as an activator would hold it; it is never dropped.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/kube_config.h"

namespace pilotlight::tools {

struct LoadOptions {
  kube::KubeConfig kube;
  std::string ns;
  std::string selector;  // e.g. "app=chat"
  int concurrency = 4;
  int max_tokens = 64;
  std::string model = "llama-3.1-8b";
};

class LoadGenerator {
 public:
  explicit LoadGenerator(LoadOptions o);
  ~LoadGenerator();  // stops

  void Start();
  void Stop();
  // Workers stop after their current request; Stop() waits for them.
  void SetConcurrency(int n);

  int64_t done() const { return done_.load(); }
  int64_t errors() const { return errors_.load(); }
  int64_t in_flight() const { return in_flight_.load(); }
  int64_t waiting() const { return waiting_.load(); }  // for a Ready pod
  int pods() const { return pods_.load(); }

 private:
  void Discover();
  void Work(int id);
  std::vector<std::string> Targets();

  LoadOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<int> active_{0};
  std::atomic<int64_t> done_{0}, errors_{0}, in_flight_{0}, waiting_{0};
  std::atomic<int> pods_{0};
  std::thread discovery_;
  std::vector<std::thread> workers_;
  struct Shared;
  std::unique_ptr<Shared> shared_;
};

}  // namespace pilotlight::tools
