// An endpoint's engines in its sleep pool (spec.sleepPool): one on each
// pod of the pool Deployment, at the pool's port, beside other endpoints'
// engines, all with sleep mode on (vLLM's level 1: weights in host memory,
// the server up). The activator sends the endpoint's requests to them while
// it has no pod of its own to send to, waking them (activator/waker.h).
//
// The controller counts them as the endpoint's first replica from zero:
//   - at zero (no replica of its own on any variant), an engine awake is a
//     ready replica of the first variant, and engines asleep are the
//     policy's SleepState there: the next replica asked for wakes one in
//     the sleep model's wake time instead of a cold start;
//   - a decision for as many replicas of the first variant as there are
//     engines starts none of its own: the activator wakes an engine for
//     the request that meets it asleep, making room on the pod's GPU
//     (activator/waker.h); a decision for zero puts the awake ones to
//     sleep (after the policy's idle grace: no request waits for them);
//   - more than that starts the endpoint's own replicas as decided; the
//     engines serve until one of them is Ready, then go to sleep (the
//     activator no longer sends to them).
// PlanPool is that rule (pure); PoolEngines sees the engines (GET
// /is_sleeping) and puts them to sleep (POST /sleep?level=1) off the
// reconciling thread, through an EngineClient (HTTP, or a fake).
//
// Thread-safety: PoolEngines' methods may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace pilotlight::runtime {

// What to do with an endpoint's own replicas and its pool engines.
struct PoolPlan {
  std::vector<int32_t> own;        // per variant: its Deployment's replicas
  std::vector<std::string> sleep;  // engines ("ip:port") to put to sleep
  int32_t engines_serving = 0;     // engines counted as replicas after it
};

// `decided` and `replicas`: per variant, the replicas decided (leaving
// pods included) and its Deployment's now; `own_ready`: the endpoint's
// own Ready pods over every variant; `awake`/`asleep`: its engines.
PoolPlan PlanPool(const std::vector<int32_t>& decided,
                  const std::vector<int32_t>& replicas, int32_t own_ready,
                  const std::vector<std::string>& awake,
                  const std::vector<std::string>& asleep);

// An engine's sleep-mode endpoints (vLLM's).
class EngineClient {
 public:
  virtual ~EngineClient() = default;
  // GET /is_sleeping: true asleep, false awake; unset: no sleep mode (404)
  // or no answer.
  virtual std::optional<bool> IsSleeping(const std::string& address) = 0;
  // POST /sleep?level=1: OK once asleep, else what the pod said.
  virtual absl::Status Sleep(const std::string& address) = 0;
};

class HttpEngineClient : public EngineClient {
 public:
  // `probe_timeout` for GET /is_sleeping, `action_timeout` for a sleep (a
  // large model's weights take seconds to copy out).
  explicit HttpEngineClient(absl::Duration probe_timeout = absl::Seconds(1),
                            absl::Duration action_timeout = absl::Minutes(2))
      : probe_timeout_(probe_timeout), action_timeout_(action_timeout) {}
  std::optional<bool> IsSleeping(const std::string& address) override;
  absl::Status Sleep(const std::string& address) override;

 private:
  const absl::Duration probe_timeout_;
  const absl::Duration action_timeout_;
};

class PoolEngines {
 public:
  enum class State { kUnknown, kAwake, kAsleep };
  // Called after a sleep with its engine and outcome (logs, metrics).
  using OnSleep = std::function<void(const std::string& address,
                                     const absl::Status& result)>;

  explicit PoolEngines(EngineClient& client, OnSleep on_sleep = nullptr)
      : client_(client), on_sleep_(std::move(on_sleep)) {}

  // `endpoint`'s engines now (replacing the last list; empty: none); what
  // was last seen of each (kUnknown until its first probe).
  std::vector<State> Look(const std::string& endpoint,
                          const std::vector<std::string>& addresses);
  void Forget(const std::string& endpoint);
  // Whether each pod at `ips` (in their order) has an engine awake, any
  // endpoint's, as last seen: the pool's GPUs taken (a wake on one of them
  // puts its engine to sleep first, or waits for it to be idle).
  std::vector<bool> AnEngineAwakeOn(const std::vector<std::string>& ips) const;
  // Puts the engine to sleep on the next pass (once however often asked
  // before it).
  void Sleep(const std::string& address);

  // One pass: the queued sleeps, then a probe of every engine looked at.
  void RunOnce();
  // A pass every `every` until `stop`.
  void Run(const std::atomic<bool>& stop, absl::Duration every);

 private:
  EngineClient& client_;
  const OnSleep on_sleep_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::string>> endpoints_;
  std::map<std::string, State> seen_;  // by address
  std::set<std::string> queued_;       // to put to sleep
};

}  // namespace pilotlight::runtime
