// RetunedPolicy ("pilotlight-retuned", experimental; `simulate --policies
// pilotlight-retuned`): the endpoint's own traffic chooses its policy.
//
// A set of candidates -- pilotlight's policy core at a few target
// utilisations, fixed keep-alives, Knative's and KEDA's target tracking --
// run side by side on the live observations, and the endpoint follows one.
// It records what a controller would have seen (arrivals per tick, in a
// TrafficRecord, and the Ready replicas), and every `every` copies each
// candidate as it stands (ScalingPolicy::Clone) with the Ready replicas.
// With enough history it replays the past -- nothing later -- through the
// simulator's own engine, once per candidate: from the oldest copy whose
// past holds at most max_replayed_requests, each candidate resumed from
// its copy and the endpoint's replicas then (SimConfig::initial_replicas,
// kept while the requests in flight refill). Without such a copy, a fresh
// instance of each replays as much of the record as the budget allows,
// from the replicas the endpoint had then, its warm-up long enough to
// rebuild what the candidates remember (ScalingPolicy::Memory; one that
// remembers more is not chosen). It then picks the cheapest whose
// replayed SLO attainment and cold-start share meet the target with a
// margin; with none, the cheapest at least as good as the defaults on the
// same replay. It switches only to the same choice made `confirm` times
// in a row, and not for a saving under `switch_saving` while the one it
// follows still qualifies. Fewer than min_replayed_requests measured, or
// less than min_replayed_span: the defaults.
//
// What it cannot know it estimates: request sizes follow the token
// histograms of the requests completed so far (as the engines export
// them), spread over the recorded arrivals; with a trace's own service
// times, the mean service time by Little's law (time in flight over
// arrivals). The live candidates observe the replicas the followed one
// asked for, not their own.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/sim/baselines.h"
#include "controller/sim/scaling_policy.h"
#include "controller/sim/traffic_record.h"

namespace pilotlight::sim {

struct RetuneCandidate {
  std::string policy;  // a PolicyNames() entry with a knob
  double knob = 0;
};

struct RetuneOptions {
  std::vector<RetuneCandidate> candidates;  // the first is followed at first
  absl::Duration every = absl::Minutes(10);
  absl::Duration min_history = absl::Minutes(30);
  // A busy endpoint replays less of the record: at most this many requests
  // (down to 5 min of it).
  int64_t max_replayed_requests = 200000;
  // Nor more of the past than this (a fresh replay's CPU grows with it).
  absl::Duration max_replayed_window = absl::InfiniteDuration();
  // With fewer measured in the replay, the defaults are followed: a 1 %
  // cold-start budget is two requests in 200.
  int64_t min_replayed_requests = 200;
  // Nor with less of the past measured than this: a replay of minutes
  // cannot tell a 1-minute keep-alive from a 20-minute one (what one
  // saves, the other pays for in a later cold start), so a busy
  // endpoint's replay cut short by max_replayed_requests keeps the
  // defaults.
  absl::Duration min_replayed_span = absl::Minutes(30);
  // Unmeasured at the start of a replay, at least (longer where a
  // candidate remembers more; at most half the replay).
  absl::Duration warmup = absl::Minutes(10);
  double target_attainment = 0.99;
  double attainment_margin = 0.002;  // above the target
  double cold_budget_share = 0.8;    // of the spec's cold-start budget
  double switch_saving = 0.05;
  // A switch needs the same choice at this many retunes in a row.
  int confirm = 2;
  // Candidates copied at the last this many retunes, to resume replays
  // from (ScalingPolicy::Clone): with `every`, how far back a replay
  // reaches (an hour). A replay's CPU grows with its length over `every`
  // (tests/bench/retune_bench.cc).
  int snapshots = 6;
};

// Pilotlight at 1.0 (its default, followed first), 0.7 and 0.5; keep-alive
// 1, 2, 5, 10, 20 and 60 min; Knative at 0.7; KEDA at 0.7 and 0.4.
std::vector<RetuneCandidate> DefaultRetuneCandidates();

// The record's last `window` before `now` as a trace: its requests sized
// as the record's histograms say, or (none recorded) as the spec's typical
// request; each served in `service_s` when given (a trace's own service
// times).
EndpointTrace RecordedPast(const TrafficRecord& record, absl::Time now,
                           absl::Duration window,
                           const policy::EndpointSpec& spec,
                           std::optional<double> service_s);

// One candidate's replay of an endpoint's recorded past.
struct ReplayedCandidate {
  double cost_usd = 0;
  double attainment = 0;  // SloAttainment
  double cold = 0;        // ColdStartFraction
  // It remembers no more than the warm-up rebuilt (ScalingPolicy::Memory):
  // replayed as it would run. The first candidate always is.
  bool eligible = true;
};

struct PastReplay {
  absl::Duration window;  // replayed, ending at `now`
  absl::Duration warmup;  // of it, not measured
  int64_t measured_requests = 0;
  std::vector<ReplayedCandidate> candidates;  // as options.candidates
};

// The recorded past of an endpoint replayed through a fresh instance of
// each of options.candidates, in the simulator's engine: as much of the
// record before `now` as max_replayed_requests allows, from the Ready
// replicas the endpoint had when it began (`replicas`; kept while the
// requests in flight then refill), with a warm-up long enough to rebuild
// what the candidates remember (at most half the replay). `past(window)`
// is the record's last `window` as a trace, its requests sized as the
// caller knows them. Nullopt: the replay would measure fewer than
// min_replayed_requests or less than min_replayed_span. Pure.
std::optional<PastReplay> ReplayPast(
    const TrafficRecord& record, absl::Time now, const SimConfig& config,
    const std::vector<ServiceModel>& models, bool service_times,
    const RetuneOptions& options,
    const std::function<EndpointTrace(absl::Duration)>& past,
    const ReplicaHistory& replicas);

// `ctx.trace` is not read (the future is not the policy's to see).
absl::StatusOr<ScalingPolicyPtr> MakeRetunedPolicy(const PolicyContext& ctx,
                                                   RetuneOptions options);

}  // namespace pilotlight::sim
