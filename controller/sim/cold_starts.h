// Cold starts in a replay: how long each replica it starts takes to be
// ready -- the cold-start model's estimate, a fixed override, or a seeded
// draw from measured samples -- and what a controller learns of them, as
// its pods' timestamps show them: the last 64 per variant, their p50 and
// p90.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/policy/snapshot.h"
#include "controller/sim/service_model.h"
#include "controller/sim/sim_config.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

// Reads measured cold starts from a CSV (optionally gzipped) with a header:
// the `value` column, or the last numeric column, in milliseconds (as in the
// Alibaba GenTD26 latency files). Bad rows are counted in `bad`.
absl::StatusOr<std::vector<double>> LoadColdStartSamples(
    const std::string& path, BadRows* bad);

class ColdStarts {
 public:
  ColdStarts(const SimConfig& config, const std::vector<ServiceModel>& models);

  // Seconds a new replica of `variant` takes from placed to ready.
  double Draw(int variant);
  // The longest any replica may take.
  double Longest() const;
  // A replica of `variant` asked for at `requested_s` became ready at
  // `ready_s`: learned as the controller measures it, from the pod's
  // creation to its Ready stamp, both at SimConfig::cold_start_resolution.
  void Learn(int variant, double requested_s, double ready_s);
  const policy::ColdStartStats& stats(int variant) const {
    return stats_[static_cast<size_t>(variant)];
  }
  // The controller's prediction: a variant's learned p90 once it has 3
  // samples, else the cold-start model's estimate; the slowest variant's.
  absl::Duration Predicted() const;

 private:
  double Measured(double requested_s, double ready_s) const;

  const SimConfig& config_;
  const std::vector<ServiceModel>& models_;
  std::vector<std::vector<double>> learned_;   // per variant, the last 64
  std::vector<policy::ColdStartStats> stats_;  // from learned_
  std::mt19937_64 rng_;
};

}  // namespace pilotlight::sim
