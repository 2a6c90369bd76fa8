// Snapshot: everything the decider sees at one decision -- the spec and
// catalog, the demand observed since the previous call, each variant's
// replicas, learned cold-start times, and spot health. Drivers (controller,
// simulator, CLI) build it; the decider only reads it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/policy/endpoint_spec.h"

namespace pilotlight::policy {

// What the serving engine's own histograms said over the sample's window,
// over the endpoint's ready pods: the inputs of the sizing model's
// calibration (model/calibration.h).
struct EngineLatency {
  double itl_s = 0;          // mean inter-token latency
  double itl_tokens = 0;     // tokens behind it
  double ttft_s = 0;         // mean time to first token (0: none)
  double ttft_requests = 0;  // first tokens behind it
  double prompt_tokens = 0;  // mean prompt length (0: unknown)
};

// One observation of the endpoint's demand, summed over its replicas and
// the activator. Every field is optional: a driver fills what it has. A
// sample with neither a concurrency nor an arrival figure carries no demand
// information and does not count as fresh data.
struct DemandSample {
  absl::Time at;
  std::optional<double> in_flight;  // requests being served
  std::optional<double> queued;     // waiting (engine queues + activator)
  std::optional<double> arrivals;  // requests arrived since the previous sample
  std::optional<double> output_tokens_per_s;  // generated tokens/s, measured
  std::optional<EngineLatency> latency;       // engines' latency histograms
  // Wakes of its engines in a sleep pool refused since the previous sample
  // (the activators'): the controller's, not the policy's.
  double wakes_refused = 0;
  // Some demand is out of sight (an activator's stream lost, or activators
  // not yet reconnected after the controller started): what is here is a
  // lower bound. The decider then scales up for it but never down.
  bool partial = false;
};

// How long a sample's arrivals figure covers when it comes from a rate:
// the time since the previous sample (`first` for the first), at most
// `most` (the rate's window covers no more). The controller's Prometheus
// arrivals and the simulator's are rate x this, so a sample an activator's
// poke adds between two ticks counts only its share.
inline absl::Duration ArrivalSpan(std::optional<absl::Time> previous,
                                  absl::Time now, absl::Duration first,
                                  absl::Duration most) {
  return previous ? std::clamp(now - *previous, absl::ZeroDuration(), most)
                  : first;
}

// What the controller learned from pod condition timestamps.
struct ColdStartStats {
  int32_t samples = 0;
  absl::Duration p50;
  absl::Duration p90;
};

// A shared pool where the variant's engines can sleep (docs/sizing.md,
// "Starting, waking, sleeping"): a replica released while an engine is to
// be kept asleep moves its weights to host memory instead of going, and
// the next replica asked for wakes it.
struct SleepState {
  absl::Duration wake;  // asleep -> serving; zero: no engine sleeps
  int32_t asleep = 0;   // engines asleep now
  double asleep_price_per_hour = 0;  // one engine's share of the pool
};

struct VariantState {
  int32_t desired = 0;  // the Deployment's current spec.replicas
  int32_t ready = 0;
  std::vector<absl::Time> starting;  // creation times of not-ready pods
  int32_t terminating = 0;
  ColdStartStats cold_start;
  // False while the variant's node pool has no free GPU for one more
  // replica: a cold start then waits for a node (the class's
  // nodeStartSeconds is added to the lead time).
  bool node_free = true;
  SleepState sleep;
};

struct SpotHealth {
  std::string gpu_class;  // the spot variant's class
  std::optional<absl::Time> last_preemption;
  std::optional<absl::Time> last_failed_placement;
};

struct Snapshot {
  const EndpointSpec* spec = nullptr;
  const model::Catalog* catalog = nullptr;
  std::span<const DemandSample> demand;  // oldest first, since the last call
  std::vector<VariantState> variants;    // parallel to spec->variants
  std::vector<SpotHealth> spot;          // per spot class; absent = healthy
};

}  // namespace pilotlight::policy
