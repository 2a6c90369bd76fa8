// Whether a simple policy beat pilotlight on a trace: the check a user runs
// on their own traffic. Pilotlight at its defaults (the run the table
// shows) is set against every run of every policy a user could run instead
// -- each one's default and each point of its matched-SLO sweep, always-on
// included; never the oracle, which knows the future:
//
//  - dominated: a run that costs at most as much, with at least the SLO
//    attainment and at most the cold-start share, and is better on one;
//  - matched SLO: where an online baseline meets the target (always-on
//    aside: it starts warm), pilotlight at its defaults must meet it too,
//    at no more than the cheapest such baseline's matched cost -- that
//    baseline tuned with hindsight on this very trace, pilotlight not;
//  - frontier: where none does (sparse or very bursty traffic), each swept
//    baseline's cost -- linear between its sweep points -- at pilotlight's
//    own attainment and at its own cold-start share, which pilotlight's
//    cost must not exceed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controller/sim/match.h"
#include "controller/sim/run.h"

namespace pilotlight::sim {

// One run of a policy: its default, or a point of its sweep.
struct PolicyRun {
  std::string policy;
  std::string setting;  // "default", or SettingLabel's
  SweepPoint point;
};

// A swept baseline's cost where pilotlight stands; unset: no point of its
// sweep gets there (pilotlight is better than it can be).
struct FrontierCost {
  std::string policy;
  std::optional<double> at_attainment;
  std::optional<double> at_cold_share;
};

struct Verdict {
  SweepPoint pilotlight;  // at its defaults
  // The runs that dominate it, cheapest first.
  std::vector<PolicyRun> dominated_by;
  // The rest needs the matched-SLO sweep.
  bool swept = false;
  double target = 0;  // the sweep's effective attainment target
  double max_cold_start_fraction = 0;
  bool pilotlight_meets_target = false;
  // The cheapest online baseline's matched point, when one meets the target.
  std::optional<PolicyRun> cheapest_matched;
  // Pilotlight's default cost over it, when both meet the target.
  std::optional<double> matched_ratio;
  std::vector<FrontierCost> frontier;  // every swept online baseline
  // Dominated; or a baseline meets the target and pilotlight does not, or
  // does at a higher cost; or none does and pilotlight lies above a
  // baseline's frontier.
  bool beaten = false;
  // What pilotlight at its defaults did, one line: "is dominated by ...",
  // "costs 1.20x ...", or that nothing beat it.
  std::string why;
};

// The policies whose runs count as what a user could run instead.
bool IsBaseline(const std::string& policy);
// Always-on aside, the oracle aside: a baseline that scales online.
bool IsOnlineBaseline(const std::string& policy);

// The cost of the lower frontier of `sweep` at `x` of `key` (attainment:
// at least x; cold share: at most x), linear between neighbouring points
// ordered by `key`; unset when no point reaches x.
enum class FrontierAxis { kAttainment, kColdShare };
std::optional<double> FrontierCostAt(const std::vector<SweepPoint>& sweep,
                                     FrontierAxis axis, double x);
// A value of the axis's quantity (attainment, cold share), or a run's,
// read so that larger is better on both: the cold share flipped, so
// "reaches x" is "at least" either way.
double FrontierKey(FrontierAxis axis, double value);
double FrontierKey(FrontierAxis axis, const SweepPoint& p);
// The segment between keys `a` and `b` crosses `at` (strictly).
bool Straddles(double a, double b, double at);

// Nothing where `defaults` holds no "pilotlight" run. `match` may be null
// (no sweep: the dominance check alone, against the other defaults).
std::optional<Verdict> Judge(const RunReport& defaults,
                             const MatchReport* match);

}  // namespace pilotlight::sim
