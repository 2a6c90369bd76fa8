// What `pilotlight simulate` prints and writes: the table, the matched-SLO
// section, and the same as JSON.
#pragma once

#include <iosfwd>
#include <string>

#include "controller/sim/match.h"
#include "controller/sim/run.h"
#include "controller/sim/simulator.h"
#include "controller/sim/trace.h"
#include "controller/sim/verdict.h"
#include "nlohmann/json.hpp"

namespace pilotlight::cmd {

// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
std::string CsvField(const std::string& v);

// The per-policy table: the trace and setting, each policy's cost, cold
// starts, latency and SLO, the misses by cause, the requests never served,
// and how fast the replay ran.
void PrintTable(const sim::Trace& t, const sim::SimConfig& c,
                const sim::RunReport& r, double wall_s, std::ostream& out);
// The matched-SLO section: each policy's cheapest setting within target.
void PrintMatch(const sim::MatchReport& m, std::ostream& out);

// Everything `simulate` prints for a run, as the table or as one JSON line:
// the policies, the matched-SLO section (`match` may be null) and, where
// pilotlight ran, the verdict.
void PrintRun(const sim::Trace& t, const sim::SimConfig& c,
              const sim::RunReport& r, const sim::MatchReport* match,
              double wall_s, bool json, std::ostream& out);

// Whether a simple policy beat pilotlight at its defaults (sim/verdict.h):
// what beat it or that nothing did, the runs that dominate it, the
// matched-SLO ratio and the baselines' frontiers where it stands.
void PrintVerdict(const sim::Verdict& v, std::ostream& out);

nlohmann::json Json(const sim::Trace& t, const sim::RunReport& r);
nlohmann::json MatchJson(const sim::MatchReport& m);
nlohmann::json VerdictJson(const sim::Verdict& v);

}  // namespace pilotlight::cmd
