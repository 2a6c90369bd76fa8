// SimConfig: what a replay is run with -- the endpoint's spec and catalog,
// the tick, billing, cold starts, spot preemptions, the activator in front
// (ActivatorModel) and the logs it writes -- and RequestRecord, one request
// as the simulator served it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/model/sizing.h"
#include "controller/policy/endpoint_spec.h"

namespace pilotlight::sim {

// The activator as the live one behaves (docs/activator.md).
struct ActivatorModel {
  // Requests held at once (the activator's --max-held); 0: no bound.
  int max_held = 1000;
  // An arrival with no replica ready asks the policy at once, this much
  // later (the measured first request -> /scale patch); unset: no poke, the
  // next tick sees it.
  std::optional<absl::Duration> poke_delay = absl::Milliseconds(10);
  // How old the demand a tick sees is: the controller decides on the
  // activator's last report (one a second, at the activator's own phase
  // against the controller's ticks), so requests in flight, held and
  // arrived are as of this long before the tick; in [0, tick). A poke is
  // reported at once. 0: the tick sees the demand of its instant.
  absl::Duration report_lag;
  // Clients give up on a request that has waited this long without
  // starting on a replica (held at zero, or queued behind full replicas)
  // and hang up; the activator counts them
  // (pilotlight_activator_abandoned_total{stage="held"}). Unset: clients
  // wait however long it takes.
  std::optional<absl::Duration> client_timeout;
  // The activator answers 503 to a request that has waited its activation
  // timeout without starting: 1.5 x the predicted cold start (the learned
  // p90 once there are 3 samples, else the cold-start model's; the slowest
  // variant's) + 30 s, at most 20 min, as of its arrival. False: requests
  // wait however long it takes.
  bool activation_timeout = true;
  // Clients try a request again when the activator refuses it (429, the
  // hold full), answers 503 (the activation timeout) or they time out
  // (client_timeout), up to this many times -- the OpenAI SDKs do, twice by
  // default: after the Retry-After the activator sends (1 s, 5 s;
  // policy/activation.h), or after a timeout the SDKs' back-off, 0.5 s x
  // 2^(tries so far), at most 8 s (their jitter, x 0.75-1, left out). Each
  // try arrives at the activator anew (the demand it reports, its hold, its
  // timeouts); the request keeps its first arrival for its TTFT and cold
  // start, and is refused, timed out or abandoned only when its last try
  // is. 0: clients do not retry.
  int client_retries = 0;
};

// One request as the simulator served it; times in seconds from the trace's
// start. `done_s` is the completion scheduled at its first start (a request
// retried after a spot preemption finishes later).
struct RequestRecord {
  double arrival_s = 0;
  double start_s = 0;  // on a replica (arrival + time held or queued)
  double ttft_s = 0;   // from arrival
  double done_s = 0;
  bool cold = false;  // it waited for this replica to become ready
  bool woke = false;  // that replica was an engine woken (SimConfig::sleep)
  int replica = 0;    // the replica's number in this run, from 0
  int variant = 0;
};

// Engines asleep in a shared pool (model::EstimateSleep; docs/simulator.md,
// "Sleeping engines"): a replica released while its policy keeps an
// engine asleep (ScalingPolicy::Asleep) sleeps instead of going, billed at
// its share of the pool; the next replica asked for wakes it in `wake`
// instead of a cold start. Endpoints are replayed one at a time, so the
// pool never runs out of room and two wakes never contend for its GPU.
struct SleepTier {
  absl::Duration wake;
  double asleep_price_per_hour = 0;
  // The pool's GPUs (the occupancy report, pool_occupancy.h): the engines
  // one holds asleep, the GPUs an engine takes, the price of one an hour.
  int engines_per_gpu = 0;
  int gpus_per_engine = 1;
  double gpu_price_per_hour = 0;
  std::string gpu_class{};
  // A pool pod's start, asked for to Ready (the variant's cold start): the
  // pool sized by the controller's rule waits this long for a new pod.
  absl::Duration pod_start{};
};

struct SimConfig {
  policy::EndpointSpec spec;  // model, SLO, variants (baselines use the first)
  const model::Catalog* catalog = nullptr;
  absl::Duration tick = absl::Seconds(2);
  // Where the ticks fall relative to the trace: at phase + k x tick, in
  // [0, tick). A live controller ticks at a phase of its own; replaying at
  // several phases shows how much a result owes to it.
  absl::Duration tick_phase;
  // The controller's --rate-window: its Prometheus arrival figure is the
  // engines' completions over this window (rate() x tick), merged with the
  // activator's exact count by taking the larger; pilotlight is given the
  // same (Observation::completions_per_s). Zero: exact arrivals only.
  absl::Duration prometheus_rate_window = absl::Minutes(1);
  // GPUs in the node pool the variants share; 0: unbounded. While the
  // replicas not gone hold all but fewer than one replica's GPUs, the
  // policy is told no node is free (VariantState::node_free), as the
  // controller is by the scheduler's view, and prices a node's start into
  // the next cold start. Placement itself is not delayed (keep
  // max_replicas within the pool).
  int pool_gpus = 0;
  absl::Duration billing_granularity = absl::Seconds(1);
  // Unset: no engine sleeps (every policy's replicas start cold).
  std::optional<SleepTier> sleep;
  // Replaces the cold-start model's estimate for every variant.
  std::optional<absl::Duration> cold_start;
  // Measured cold starts, seconds: each new replica draws one (seeded),
  // replacing the model's estimate and `cold_start` (e.g. the Alibaba
  // trace's base-model load latencies; see LoadColdStartSamples).
  std::vector<double> cold_start_samples;
  // The resolution of the timestamps a live controller learns cold starts
  // from: a pod's creationTimestamp and Ready condition, which the API
  // server keeps in whole seconds (10.2 s reads 10 or 11 s by where the
  // start falls in its second). The policies learn the same. 0: exact.
  absl::Duration cold_start_resolution = absl::Seconds(1);
  model::EngineTuning tuning;
  // Where the simulated clock starts (time of day matters to the policy's
  // seasonal profile).
  absl::Time epoch = absl::FromUnixSeconds(1'700'000'000);
  // Timeline points kept for the report (0 = none).
  int timeline_points = 0;
  // Spot preemptions: a Poisson process per spot variant at this rate; each
  // event takes every replica of the variant in one zone (replicas are
  // spread round-robin over `zones`), and that zone places no new spot
  // replica for `spot_zone_outage` (Spot-and-Scoot, 2026: interruptions of
  // one instance type in one zone land within 3 min of each other in >92 %
  // of 2,635 AWS and Azure events). Requests on a preempted replica are
  // retried from the front of the queue. Seeded.
  double spot_preemptions_per_hour = 0;
  // Each preemption announced this long ahead (AWS gives 2 minutes, GCP and
  // Azure 30 s): its replicas are leaving from then -- the policy sees them
  // gone and starts replacements, and they serve until those are Ready
  // (policy::ReplicasWithLeaving), as the controller does with a node's
  // notice taint. 0: unannounced.
  absl::Duration spot_notice = absl::ZeroDuration();
  int zones = 3;
  absl::Duration spot_zone_outage = absl::Minutes(3);
  uint64_t seed = 1;
  ActivatorModel activator;
  // Idle skipping: while nothing is in flight, queued, starting or
  // draining, and the policy promises its answer stands (ScalingPolicy::
  // QuietUntil), jump to the next arrival, preemption, timeline point or
  // policy deadline instead of stepping the tick. Results are the same as
  // stepping (tests/sim/idle_skip_test.cc); false steps every tick.
  bool skip_idle = true;
  // The first `warmup` of the replay is run but not measured: requests
  // arriving in it are served and not counted (nor their cold starts, SLO,
  // rejections), scale events are counted from its end, and cost is each
  // replica's billed time after it. A trace slice begins mid-traffic, yet
  // every online policy starts it at zero replicas with no history, while
  // the oracle, placing cold starts with hindsight, starts warm: the
  // warm-up leaves that start-up transient out of the comparison
  // (docs/benchmarks.md). 0: everything is measured.
  absl::Duration warmup;
  // A replay of an endpoint's past: replicas of each variant (by index) up
  // and Ready when the replay's clock starts, billed from then, as the
  // endpoint had them; the policy sees them desired and Ready. Given (even
  // all 0), the clock starts at 0 with no pre-roll: the policy may be one
  // resumed from that moment. Empty: every policy starts at zero.
  std::vector<int> initial_replicas;
  // With initial_replicas: the policy is first asked at the first tick at
  // or after this; until then the replicas stay as they were while the
  // requests in flight at the start (which a replay of arrivals from then
  // does not hold) build up again, and a policy resumed from a later
  // moment is not asked before it.
  absl::Duration initial_hold;
  // A prompt-length-aware TTFT SLO: a request with P prompt tokens is within
  // it when its TTFT <= spec.slo.ttft + P x this (seconds per prompt token;
  // 0: the flat SLO), as serving SLOs are written for long prompts.
  double ttft_slo_per_prompt_token_s = 0;
  // Given each of pilotlight's decisions as a policy::DecisionRecord line
  // (simulate --decision-log), for the run at its default setting; called
  // from the thread simulating the endpoint.
  std::function<void(const std::string& line)> decision_log;
  // Given each request once, when it first starts on a replica (simulate
  // --requests), to compare a simulated run with a live one request by
  // request; called from the thread simulating the endpoint.
  std::function<void(const RequestRecord& r)> request_log;
};

}  // namespace pilotlight::sim
