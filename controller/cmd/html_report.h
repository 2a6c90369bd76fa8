// The simulator's HTML report: one self-contained page (inline SVG and CSS,
// no scripts, no network) with the summary table and, per policy, replicas
// against demand over time, cumulative cold starts and cumulative cost;
// with the matched-SLO sweep, cost against SLO attainment per policy.
#pragma once

#include <string>

#include "controller/sim/match.h"
#include "controller/sim/run.h"
#include "controller/sim/simulator.h"
#include "controller/sim/trace.h"

namespace pilotlight::cmd {

// `match` (may be null): the matched-SLO sweep, drawn as cost against SLO
// attainment per policy.
std::string HtmlReport(const sim::Trace& trace, const sim::SimConfig& config,
                       const sim::RunReport& report,
                       const sim::MatchReport* match = nullptr);

}  // namespace pilotlight::cmd
