// RetunedPolicy ("pilotlight-retuned", experimental; `simulate --policies
// pilotlight-retuned`): the endpoint's own traffic chooses its policy.
//
// A set of candidates -- pilotlight's policy core at a few target
// utilisations, fixed keep-alives, Knative's and KEDA's target tracking --
// run side by side on the live observations, and the endpoint follows one.
// Every `every` of the replay it records what a controller would have seen
// (arrivals per tick, in a TrafficRecord) and, with enough history, replays
// that past -- nothing later -- through a fresh instance of each candidate
// in the simulator's own engine, then follows the cheapest whose replayed
// SLO attainment and cold-start share meet the target with a margin; with
// none, the cheapest within half a point of the best attainment. It
// switches only for a saving of
// `switch_saving` or when the one it follows misses the target.
//
// What it cannot know it estimates: request sizes follow the token
// histograms of the requests completed so far (as the engines export
// them), spread over the recorded arrivals; with a trace's own service
// times, the mean service time by Little's law (time in flight over
// arrivals). A replay starts with
// no replica and leaves its first `warmup` unmeasured. The live candidates
// observe the replicas the followed one asked for, not their own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/sim/baselines.h"
#include "controller/sim/scaling_policy.h"

namespace pilotlight::sim {

struct RetuneCandidate {
  std::string policy;  // a PolicyNames() entry with a knob
  double knob = 0;
};

struct RetuneOptions {
  std::vector<RetuneCandidate> candidates;  // the first is followed at first
  absl::Duration every = absl::Minutes(5);
  absl::Duration min_history = absl::Minutes(30);
  absl::Duration max_history = absl::Hours(6);
  // A busy endpoint replays less history: at most this many requests
  // (down to 5 min of it).
  int64_t max_replayed_requests = 20000;
  // Unmeasured at the start of a replay (at most a third of it).
  absl::Duration warmup = absl::Minutes(10);
  double target_attainment = 0.99;
  double attainment_margin = 0.002;  // above the target
  double cold_budget_share = 0.8;    // of the spec's cold-start budget
  // With none meeting the target: the cheapest this close to the best
  // replayed attainment.
  double near_best = 0.005;
  double switch_saving = 0.05;
};

// Pilotlight at 1.0 (its default, followed first), 0.7 and 0.5; keep-alive
// 1, 2, 5, 10, 20 and 60 min; Knative at 0.7; KEDA at 0.7 and 0.4.
std::vector<RetuneCandidate> DefaultRetuneCandidates();

// `ctx.trace` is not read (the future is not the policy's to see).
absl::StatusOr<ScalingPolicyPtr> MakeRetunedPolicy(const PolicyContext& ctx,
                                                   RetuneOptions options);

}  // namespace pilotlight::sim
