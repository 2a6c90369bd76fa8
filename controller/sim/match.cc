#include "controller/sim/match.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
    runs += k ? k->sweep.size() : 1;
  }
  size_t done = 0;
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
      RunOptions o;
      o.policies = {n};
      o.knob = v;
      if (progress) {
        const std::string what =
            v ? absl::StrCat(n, " at ", *v, k->unit) : std::string(n);
        o.progress = [&, what](double f, const std::string&) {
          progress((static_cast<double>(done) + f) / static_cast<double>(runs),
                   what);
        };
      }
      absl::StatusOr<RunReport> r = RunSimulation(trace, config, o);
      if (!r.ok()) {
        return r.status();
      }
      ++done;
      const SimResult& s = r->policies.front().result;
      m.sweep.push_back({v, s.cost_usd, SloAttainment(s), ColdStartFraction(s),
                         s.ttft.Quantile(0.99)});
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
  for (MatchedPolicy& m : report.policies) {
    for (size_t i = 0; i < m.sweep.size(); ++i) {
      const SweepPoint& p = m.sweep[i];
      if (p.slo_attainment >= report.effective - 1e-12 &&
          p.cold_start_fraction <= report.max_cold_start_fraction + 1e-12 &&
          (!m.chosen || p.cost_usd < m.sweep[*m.chosen].cost_usd)) {
        m.chosen = i;
      }
    }
  }
  return report;
}

}  // namespace pilotlight::sim
