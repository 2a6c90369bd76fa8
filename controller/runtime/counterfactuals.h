// Counterfactuals: what other policies would have cost each endpoint on
// its own recorded traffic (status.counterfactual, `pilotlight explain`).
//
// Every `every`, the reconciler hands the replayer a copy of an endpoint's
// traffic record (sim::TrafficRecord), the Ready replicas it had, and its
// spec; on its own thread, off the tick path, the replayer replays that
// past through the simulator's engine once per candidate -- pilotlight as
// the controller runs it, and the simple policies users run today (fixed
// keep-alives, Knative's and KEDA's target tracking, pilotlight at other
// target utilisations) -- exactly as `pilotlight-retuned` does in the
// simulator (sim::ReplayPast), and keeps the newest table per endpoint.
// The thread keeps within a CPU budget: after each replay it sleeps in
// proportion to the CPU the replay took; and it runs at the lowest
// priority (SCHED_IDLE), so a tick's reconciles never wait for it.
// Nothing is chosen from the table yet: it says what the endpoint's own
// traffic says of each candidate.
//
// Thread-safety: Submit, Latest and Forget may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/policy/endpoint_spec.h"
#include "controller/sim/retuned_policy.h"
#include "controller/sim/traffic_record.h"
#include "nlohmann/json.hpp"

namespace pilotlight::runtime {

// One candidate's replay.
struct CounterfactualRow {
  std::string policy;  // a simulator policy name
  double knob = 0;     // its setting (sim::PolicyKnob)
  double cost_per_hour = 0;
  double attainment = 0;  // share of requests within the SLO
  double cold = 0;        // share of requests that met a cold start
  // Replayed as it runs (it remembers no more than the warm-up rebuilt).
  bool eligible = true;
  bool running = false;  // what the controller runs
};

struct Counterfactual {
  absl::Time at;  // of the record's last look it replayed
  absl::Duration window;
  absl::Duration warmup;                // unmeasured, of the window
  int64_t requests = 0;                 // measured
  std::vector<CounterfactualRow> rows;  // the candidates, in their order
  // Without rows: why none were replayed.
  std::string note;
};

// What a replay needs, copied from the reconciler's endpoint.
struct CounterfactualJob {
  std::string key;  // "namespace/name"
  sim::TrafficRecord record;
  sim::ReplicaHistory replicas;
  policy::EndpointSpec spec;
  std::shared_ptr<const model::Catalog> catalog;  // the spec's classes
  std::optional<absl::Duration> cold_start;       // learned (p50)
  double target_utilization = 1.0;                // the controller's
};

struct CounterfactualOptions {
  absl::Duration every = absl::Minutes(10);
  // Of one core, on average: after a replay that took c CPU-seconds the
  // thread sleeps c x (1 / budget - 1).
  double cpu_budget = 0.5;
  // Tests: Submit replays at once on the caller's thread.
  bool synchronous = false;
  // Called after each replay with the CPU it took (metrics).
  std::function<void(double cpu_seconds)> on_replay;
  // The candidates, the request budget, the floors (sim::RetuneOptions;
  // its first candidate is replaced by pilotlight as the controller runs
  // it).
  sim::RetuneOptions replay = DefaultReplay();

  static sim::RetuneOptions DefaultReplay();
};

class CounterfactualReplayer {
 public:
  explicit CounterfactualReplayer(CounterfactualOptions options);
  ~CounterfactualReplayer();
  CounterfactualReplayer(const CounterfactualReplayer&) = delete;
  CounterfactualReplayer& operator=(const CounterfactualReplayer&) = delete;

  const CounterfactualOptions& options() const { return options_; }

  // Queues a replay; one already queued for the same key is replaced.
  void Submit(CounterfactualJob job);
  // The newest replay of `key`.
  std::optional<Counterfactual> Latest(const std::string& key) const;
  void Forget(const std::string& key);

  // One replay (pure; what the thread runs).
  static Counterfactual Replay(const CounterfactualJob& job,
                               const sim::RetuneOptions& options);

 private:
  void Loop();
  // Replay, its CPU seconds in `cpu` and to on_replay.
  Counterfactual TimedReplay(const CounterfactualJob& job, double& cpu) const;

  const CounterfactualOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<CounterfactualJob> queue_;
  std::map<std::string, Counterfactual> latest_;
  std::set<std::string> forgotten_;  // while a replay of it runs
  bool stop_ = false;
  std::thread thread_;
};

// The row of what the controller runs (nullptr: none).
const CounterfactualRow* RunningRow(const Counterfactual& c);
// The cheapest candidate replayed as it runs that did at least as well as
// the one running -- SLO attainment as high or higher, cold-start share as
// low or lower -- for less (nullopt: none did, or no row runs). The
// comparison explain, the metrics, the Event and the alert all read.
std::optional<size_t> CheaperAsGood(const Counterfactual& c);
// What the candidate of `row` is called in words: "keep-alive 5 min",
// "pilotlight at 0.7".
std::string CandidateName(const CounterfactualRow& row);

// status.counterfactual (CRD schema: the InferenceAutoscaler's
// status.counterfactual).
nlohmann::json CounterfactualJson(const Counterfactual& c);

}  // namespace pilotlight::runtime
