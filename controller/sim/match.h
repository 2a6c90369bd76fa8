// Cost at matched SLO: each policy judged at the same latency. For every
// policy with a knob (PolicyKnob: target utilisation, keep-alive) the whole
// trace is replayed at each setting of its sweep; the policy's matched cost
// is that of its cheapest setting whose SLO attainment (TTFT and TPOT) is
// at least the target and whose cold-start fraction is within the spec's
// budget, refined by bisection inside the grid step where the target is
// first met. Each online baseline's sweep is also refined by bisection
// where pilotlight at its defaults stands (its attainment, its cold-start
// share), so the verdict reads its frontier between runs close by. Policies
// without a knob are one point. When even the oracle cannot reach the target
// (prompts whose prefill alone breaks the TTFT SLO), the target becomes the
// oracle's attainment less one point.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/sim/run.h"
#include "controller/sim/simulator.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

struct SweepPoint {
  std::optional<double> value;  // the knob's value; unset: no knob
  double cost_usd = 0;
  double slo_attainment = 0;       // within both SLOs
  double cold_start_fraction = 0;  // waited for a starting replica
  double ttft_p99_s = 0;
};

struct MatchedPolicy {
  std::string name;
  std::string knob;  // "" without one
  std::string unit;
  std::vector<SweepPoint> sweep;  // in the knob's sweep order
  // The cheapest point meeting the target and the cold-start budget.
  std::optional<size_t> chosen;
};

struct MatchReport {
  double target = 0;     // as asked
  double effective = 0;  // after the oracle's cap
  double max_cold_start_fraction = 0;
  std::vector<MatchedPolicy> policies;
};

// Settings tried between the chosen grid point and the one before it that
// fell short of the target (bisection; MatchSlo).
inline constexpr int kMatchRefineSteps = 3;
// Settings tried, per axis, between an online baseline's two neighbouring
// settings whose runs lie either side of pilotlight's defaults (its SLO
// attainment; its cold-start share): the verdict's frontier reads the
// sweep there (verdict.h).
inline constexpr int kFrontierRefineSteps = 3;

// "target utilisation 0.55", "keep-alive 20min", or "(no knob)".
std::string SettingLabel(const MatchedPolicy& m, const SweepPoint& p);

// `progress` (may be empty) as RunOptions::progress, over the whole sweep.
absl::StatusOr<MatchReport> MatchSlo(
    const Trace& trace, const SimConfig& config,
    const std::vector<std::string>& policies, double target,
    const std::function<void(double, const std::string&)>& progress);

}  // namespace pilotlight::sim
