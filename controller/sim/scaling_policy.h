// ScalingPolicy: what the simulator asks every tick -- "how many replicas of
// each variant now?" -- given what a real autoscaler could observe. One
// implementation wraps the real policy core (pilotlight); the others are
// faithful re-implementations of the policies in use today (baselines.h).
// Thread-safety: none; one instance per simulated endpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/policy/snapshot.h"

namespace pilotlight::sim {

// What a policy observes at a tick.
struct Observation {
  absl::Time now;
  double in_flight = 0;  // requests being served
  double queued = 0;     // waiting for a replica (incl. cold-start waits)
  double arrivals = 0;   // since the previous tick
  // Requests completed per second over the last SimConfig::
  // prometheus_rate_window: what the controller's Prometheus arrival
  // figure (rate() of the engines' success counter) says, lagging and
  // smoothed; 0 with no window.
  double completions_per_s = 0;
  double output_tokens_per_s = 0;  // generated since the previous tick / dt
  // The prompt and output tokens of each request completed since the
  // previous tick, as the engines' token histograms count them -- only for
  // a policy whose WantsRequestSizes() says so (empty otherwise).
  struct RequestSize {
    uint32_t input_tokens = 0;
    uint32_t output_tokens = 0;
  };
  std::vector<RequestSize> completed_sizes;
  // Per variant: desired, ready, starting (with creation times), learned
  // cold-start stats -- what the controller reads from the cluster.
  std::vector<policy::VariantState> variants;
  // Spot health per spot class: the last preemption seen.
  std::vector<policy::SpotHealth> spot;
};

class ScalingPolicy {
 public:
  virtual ~ScalingPolicy() = default;
  virtual std::string name() const = 0;
  // Desired replicas per variant (same order as Observation::variants).
  virtual std::vector<int> Tick(const Observation& o) = 0;

  // Idle skipping (docs/simulator.md "Idle time"). Asked only after a Tick
  // whose observation was quiet -- nothing in flight, queued or arriving,
  // no tokens, every variant settled (none starting or terminating, ready =
  // desired); the simulator checks that, policies need not. The time before
  // which every further such tick (the replicas as this Tick left them)
  // would return what this Tick returned, so the simulator may replace
  // those ticks with one SkipQuiet call. InfinitePast (the default): no
  // promise, tick every time.
  virtual absl::Time QuietUntil() const { return absl::InfinitePast(); }
  // Stands for `n` quiet ticks at first, first + step, ..., all before
  // QuietUntil(): the policy records what those ticks would have recorded
  // (its demand windows, decays), so the replay is the one stepping gives.
  virtual void SkipQuiet(absl::Time /*first*/, absl::Duration /*step*/,
                         int64_t /*n*/) {}

  // Which idle replica a scale-down removes. false (the default): the
  // newest, as a ReplicaSet does. true: the one with the least paid
  // time left in its billing period (with billing coarser than the tick;
  // a plan that stops replicas at their periods' ends needs it).
  virtual bool RemoveByPaidTime() const { return false; }

  // A copy in its present state, to replay from this moment on (nullptr:
  // it cannot be copied).
  virtual std::unique_ptr<ScalingPolicy> Clone() const { return nullptr; }

  // How far back what it observed still shapes its answers (a keep-alive's
  // length, a stabilisation window): a replay must run at least this long
  // before its answers are the ones a long-running instance would give.
  // Zero (the default): it keeps nothing.
  virtual absl::Duration Memory() const { return absl::ZeroDuration(); }

  // Whether its observations carry the sizes of the requests completed
  // (Observation::completed_sizes). false (the default): they do not.
  virtual bool WantsRequestSizes() const { return false; }

  // Engines per variant its last Tick keeps asleep (SimConfig::sleep):
  // released replicas sleep while fewer are, and those beyond it go.
  // Empty (the default): none -- the baselines have no such tier.
  virtual std::vector<int> Asleep() const { return {}; }
  // Whether it keeps engines asleep at all (Asleep): its requests at zero
  // are then held as the live activator holds an endpoint with a sleep
  // pool's (policy::ActivationRule's `sleep_pool`).
  virtual bool KeepsEnginesAsleep() const { return false; }
};

using ScalingPolicyPtr = std::unique_ptr<ScalingPolicy>;

}  // namespace pilotlight::sim
