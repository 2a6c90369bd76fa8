#include "controller/sim/match.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/base/status_macros.h"
#include "controller/sim/baselines.h"

namespace pilotlight::sim {

std::string SettingLabel(const MatchedPolicy& m, const SweepPoint& p) {
  if (!p.value) {
    return "(no knob)";
  }
  return absl::StrFormat("%s %g%s", m.knob, *p.value, m.unit);
}

absl::StatusOr<MatchReport> MatchSlo(
    const Trace& trace, const SimConfig& config,
    const std::vector<std::string>& policies, double target,
    const std::function<void(double, const std::string&)>& progress) {
  MatchReport report;
  report.target = target;
  report.max_cold_start_fraction = config.spec.slo.max_cold_start_fraction;
  const std::vector<std::string> names =
      policies.empty() ? PolicyNames() : policies;
  size_t runs = 0;
  for (const std::string& n : names) {
    const std::optional<PolicyKnob> k = KnobOf(n);
    runs += k ? k->sweep.size() + kMatchRefineSteps : 1;
  }
  size_t done = 0;
  const auto run = [&](const std::string& n, const std::optional<double>& v,
                       const std::string& unit) -> absl::StatusOr<SweepPoint> {
    RunOptions o;
    o.policies = {n};
    o.knob = v;
    if (progress) {
      const std::string what =
          v ? absl::StrCat(n, " at ", *v, unit) : std::string(n);
      o.progress = [&, what](double f, const std::string&) {
        progress(std::min(1.0, (static_cast<double>(done) + f) /
                                   static_cast<double>(runs)),
                 what);
      };
    }
    absl::StatusOr<RunReport> r = RunSimulation(trace, config, o);
    if (!r.ok()) {
      return r.status();
    }
    ++done;
    const SimResult& s = r->policies.front().result;
    return SweepPoint{v, s.cost_usd, SloAttainment(s), ColdStartFraction(s),
                      s.ttft.Quantile(0.99)};
  };
  for (const std::string& n : names) {
    MatchedPolicy m;
    m.name = n;
    const std::optional<PolicyKnob> k = KnobOf(n);
    std::vector<std::optional<double>> values = {std::nullopt};
    if (k) {
      m.knob = k->name;
      m.unit = k->unit;
      values.assign(k->sweep.begin(), k->sweep.end());
    }
    for (const std::optional<double>& v : values) {
      PL_ASSIGN_OR_RETURN(SweepPoint p, run(n, v, m.unit));
      m.sweep.push_back(p);
    }
    report.policies.push_back(std::move(m));
  }
  // The target no policy could reach: the oracle's attainment less a point.
  report.effective = target;
  for (const MatchedPolicy& m : report.policies) {
    if (m.name == "oracle") {
      report.effective =
          std::min(target, m.sweep.front().slo_attainment - 0.01);
    }
  }
  const auto meets = [&](const SweepPoint& p) {
    return p.slo_attainment >= report.effective - 1e-12 &&
           p.cold_start_fraction <= report.max_cold_start_fraction + 1e-12;
  };
  const auto choose = [&](MatchedPolicy& m) {
    m.chosen.reset();
    for (size_t i = 0; i < m.sweep.size(); ++i) {
      if (meets(m.sweep[i]) &&
          (!m.chosen || m.sweep[i].cost_usd < m.sweep[*m.chosen].cost_usd)) {
        m.chosen = i;
      }
    }
  };
  for (MatchedPolicy& m : report.policies) {
    choose(m);
    // The grid is coarse (target utilisation 0.55 then 0.4): between the
    // chosen setting and the grid's step before it (less capacity, short
    // of the target), bisect -- the setting that just reaches the target
    // is often well inside the step. Only evaluated points are chosen.
    if (!m.chosen || *m.chosen == 0 || !m.sweep[*m.chosen].value ||
        meets(m.sweep[*m.chosen - 1])) {
      continue;
    }
    double fail = *m.sweep[*m.chosen - 1].value;
    double pass = *m.sweep[*m.chosen].value;
    // New points are kept in the sweep's order (the grid runs one way
    // along the knob, as from `fail` to `pass`).
    const bool falling = fail > pass;
    for (int i = 0; i < kMatchRefineSteps; ++i) {
      const double mid = (fail + pass) / 2;
      PL_ASSIGN_OR_RETURN(SweepPoint p, run(m.name, mid, m.unit));
      (meets(p) ? pass : fail) = mid;
      const auto at = std::find_if(
          m.sweep.begin(), m.sweep.end(), [&](const SweepPoint& q) {
            return falling ? *q.value < mid : *q.value > mid;
          });
      m.sweep.insert(at, p);
    }
    choose(m);
  }
  return report;
}

}  // namespace pilotlight::sim
