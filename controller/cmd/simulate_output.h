// What `pilotlight simulate` prints and writes: the table, the matched-SLO
// section, and the same as JSON.
#pragma once

#include <iosfwd>
#include <string>

#include "controller/sim/match.h"
#include "controller/sim/run.h"
#include "controller/sim/simulator.h"
#include "controller/sim/trace.h"
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

nlohmann::json Json(const sim::Trace& t, const sim::RunReport& r);
nlohmann::json MatchJson(const sim::MatchReport& m);

}  // namespace pilotlight::cmd
