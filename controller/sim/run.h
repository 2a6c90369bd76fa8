// RunSimulation: every endpoint of a trace through every chosen policy,
// results merged per policy. Endpoints are independent, so they run one at
// a time and rate traces are sampled one endpoint at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/sim/simulator.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

struct RunOptions {
  std::vector<std::string> policies;  // empty = all, in PolicyNames() order
  // Sets each policy's knob (PolicyKnob; every policy run must have one).
  std::optional<double> knob;
  // Called with the fraction done as each replay of (endpoint, policy)
  // moves (every hundredth of the trace) and when it ends.
  std::function<void(double fraction, const std::string& what)> progress;
  // Given every request of every (policy, endpoint) replay as it first
  // starts (SimConfig::request_log).
  std::function<void(const std::string& policy, const std::string& endpoint,
                     const RequestRecord& r)>
      request_log;
};

struct PolicyResult {
  std::string name;
  SimResult result;  // merged over endpoints; timeline summed by point
  // With SimConfig::sleep, the pool its engines took, across the endpoints
  // (none where no engine slept).
  std::optional<PoolOccupancy> pool;
  // The same pool sized by the controller's rule (sim::Sized).
  std::optional<SizedPool> sized_pool;
};

struct RunReport {
  int64_t requests = 0;
  int endpoints = 0;
  double duration_s = 0;
  std::vector<PolicyResult> policies;
};

// The workload shape of a trace's requests, into `spec.workload`: mean
// prompt and output, and a context that holds the 99th-percentile request
// (at least 8,192, at most the model's). Traces without token lengths
// (service-time or rate traces) leave the defaults.
void ShapeFromTrace(const Trace& t, policy::EndpointSpec& spec);

absl::StatusOr<RunReport> RunSimulation(const Trace& trace,
                                        const SimConfig& config,
                                        const RunOptions& options);

}  // namespace pilotlight::sim
