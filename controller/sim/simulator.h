// The discrete-event simulator: replays one endpoint's requests through a
// ScalingPolicy, deterministically, and measures cost and latency.
//
// Per replica: requested -> (cold start: node, pull, weights, init from the
// cold-start model, or a fixed override) -> ready -> draining (finishes its
// requests, takes no new ones) -> gone. Billing runs from requested to gone,
// rounded up per replica to the billing granularity.
//
// Service: continuous batching on `slots` sequences per replica (the sizing
// model's concurrency at the TPOT SLO). A request starts on the least-loaded
// ready replica with a free slot, else waits in FIFO order. Its time to first
// token = wait + prefill (the sizing model's compute-bound TTFT for its
// prompt); it then decodes its output tokens at TPOT(batch at admission) from
// the sizing model. A trace with its own service times (Alibaba) uses them
// instead, one request per replica at a time, and its TTFT is the wait.
// A request is a cold-start request when it waited for a replica that was
// not yet ready when it arrived (it starts on one whose ready time is after
// its arrival) -- not only when none was ready; the activator counts the
// same way live (controller/activator/router.h).
//
// The activator in front (ActivatorModel): requests wait in its hold, which
// is bounded (an arrival that finds the hold full and no free slot is
// rejected, as the activator answers 429), each replica takes at most its
// slots at once (the activator's per-pod cap is the same sizing-model
// concurrency), and an arrival while no replica is ready pokes the policy
// `poke_delay` later instead of waiting for the next tick. A request that
// cannot start waits at most the activator's activation timeout (1.5 x the
// predicted cold start + 30 s), then is answered 503; clients may give up
// sooner (ActivatorModel::client_timeout) and leave the hold or the queue,
// as a client hanging up leaves the activator's; and clients may try again
// (ActivatorModel::client_retries), as the OpenAI SDKs do.
//
// The policy is asked every tick (2 s) -- and on a poke -- with what a
// controller could observe: in flight, queued, arrivals and generated tokens
// since the last tick, and per variant desired/ready/starting replicas and
// the cold-start p50/p90 it has measured so far. Quiet ticks the policy
// says cannot change its answer are skipped (SimConfig::skip_idle).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "controller/sim/activator_hold.h"
#include "controller/sim/cold_starts.h"
#include "controller/sim/latency_histogram.h"
#include "controller/sim/pool_occupancy.h"
#include "controller/sim/scaling_policy.h"
#include "controller/sim/service_model.h"
#include "controller/sim/sim_config.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

struct TimelinePoint {
  double t_s = 0;
  double demand = 0;  // in flight + queued, at the tick
  int replicas = 0;   // requested and not gone (all variants)
  int ready = 0;
  int64_t cold_starts = 0;  // cumulative cold-start requests
  double cost_usd = 0;      // cumulative, unrounded
};

struct SimResult {
  int64_t requests = 0;
  int64_t cold_start_requests = 0;
  int64_t within_ttft_slo = 0;  // TTFT within the (prompt-aware) TTFT SLO
  int64_t within_tpot_slo = 0;  // decoded at a TPOT within the TPOT SLO
  int64_t within_slo = 0;       // both: what SLO attainment means
  LatencyHistogram ttft;
  double cost_usd = 0;
  double gpu_seconds = 0;
  int64_t scale_events = 0;       // changes of a variant's desired replicas
  int64_t preemptions = 0;        // spot replicas taken
  int64_t noticed = 0;            // spot replicas told of it ahead
  int64_t retried_requests = 0;   // in flight on a preempted replica
  int64_t rejected_requests = 0;  // the activator's hold was full (429)
  // The client gave up before its request started (client_timeout): a
  // miss, counted in slo_misses by the state it found on arrival, and a
  // cold-start request if a replica was starting when it left.
  int64_t abandoned_requests = 0;
  // Answered 503 after the activator's activation timeout, the same way
  // (ActivatorModel::activation_timeout).
  int64_t activation_timeouts = 0;
  // Tries clients made again after a refusal or a timeout
  // (ActivatorModel::client_retries); the outcomes above count last tries.
  int64_t client_retries = 0;
  // Engines woken from sleep (SimConfig::sleep), and the requests that
  // waited for one: not cold-start requests (a wake is within the TTFT
  // SLO or counts as a miss like any slow start).
  int64_t wakes = 0;
  int64_t wake_requests = 0;
  // The pool's engines asleep and woken, as they changed (Occupancy), and
  // of cost_usd, what they were billed: the engines asleep their share of
  // the pool, the woken ones as replicas.
  std::vector<PoolChange> pool_changes;
  double asleep_cost_usd = 0;
  double woken_cost_usd = 0;
  int64_t pokes = 0;          // policy asked between ticks
  int64_t ticks = 0;          // policy asked (ticks and pokes)
  int64_t skipped_ticks = 0;  // quiet ticks idle skipping stood in for
  int peak_replicas = 0;
  // SLO misses by the state the request found on arrival (MissCause).
  std::array<int64_t, 4> slo_misses{};  // indexed by MissCause
  std::vector<TimelinePoint> timeline;

  void Merge(const SimResult& o);
};

// The share of requests within both SLOs (1 with no requests).
double SloAttainment(const SimResult& r);
// The share of requests that waited for a starting replica.
double ColdStartFraction(const SimResult& r);

// Told how far a replay has got: simulated time / duration, in [0, 1].
using ReplayProgress = std::function<void(double fraction)>;

// Replays `requests` (sorted, seconds from 0) for `duration_s` through
// `policy`. `progress`, if set, is called as the replay passes each
// hundredth of `duration_s` (a long replay of one endpoint shows it moving).
SimResult SimulateEndpoint(const EndpointTrace& requests, double duration_s,
                           const SimConfig& config,
                           const std::vector<ServiceModel>& models,
                           ScalingPolicy& policy,
                           const ReplayProgress& progress = {});

}  // namespace pilotlight::sim
