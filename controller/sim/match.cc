#include "controller/sim/match.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/base/status_macros.h"
#include "controller/sim/baselines.h"
#include "controller/sim/verdict.h"

namespace pilotlight::sim {

std::string SettingLabel(const MatchedPolicy& m, const SweepPoint& p) {
  if (!p.value) {
    return "(no knob)";
  }
  return absl::StrFormat("%s %g%s", m.knob, *p.value, m.unit);
}

namespace {

// Replays the trace once per (policy, setting), telling `progress` how far
// the whole sweep has got.
class SweepRunner {
 public:
  using Progress = std::function<void(double, const std::string&)>;
  SweepRunner(const Trace& trace, const SimConfig& config,
              const std::vector<std::string>& names, const Progress& progress)
      : trace_(trace), config_(config), progress_(progress) {
    const bool pilotlight =
        std::find(names.begin(), names.end(), "pilotlight") != names.end();
    for (const std::string& n : names) {
      const std::optional<PolicyKnob> k = KnobOf(n);
      runs_ += k ? k->sweep.size() + kMatchRefineSteps : 1;
      if (k && pilotlight && IsOnlineBaseline(n)) {
        // One crossing per axis, as a rule.
        runs_ += static_cast<size_t>(2 * kFrontierRefineSteps);
      }
    }
  }

  absl::StatusOr<SweepPoint> Run(const std::string& name,
                                 const std::optional<double>& value,
                                 const std::string& unit) {
    RunOptions o;
    o.policies = {name};
    o.knob = value;
    if (progress_) {
      const std::string what =
          value ? absl::StrCat(name, " at ", *value, unit) : std::string(name);
      o.progress = [this, what](double f, const std::string&) {
        progress_(std::min(1.0, (static_cast<double>(done_) + f) /
                                    static_cast<double>(runs_)),
                  what);
      };
    }
    PL_ASSIGN_OR_RETURN(const RunReport r, RunSimulation(trace_, config_, o));
    ++done_;
    const SimResult& s = r.policies.front().result;
    return SweepPoint{value, s.cost_usd, SloAttainment(s), ColdStartFraction(s),
                      s.ttft.Quantile(0.99)};
  }

 private:
  const Trace& trace_;
  const SimConfig& config_;
  const Progress& progress_;
  size_t runs_ = 0;
  size_t done_ = 0;
};

// Whether a point meets the (effective) target and the cold-start budget.
bool Meets(const MatchReport& report, const SweepPoint& p) {
  return p.slo_attainment >= report.effective - 1e-12 &&
         p.cold_start_fraction <= report.max_cold_start_fraction + 1e-12;
}

// The cheapest point that meets the target, if any.
void Choose(const MatchReport& report, MatchedPolicy& m) {
  m.chosen.reset();
  for (size_t i = 0; i < m.sweep.size(); ++i) {
    if (Meets(report, m.sweep[i]) &&
        (!m.chosen || m.sweep[i].cost_usd < m.sweep[*m.chosen].cost_usd)) {
      m.chosen = i;
    }
  }
}

// The grid is coarse (target utilisation 0.55 then 0.4): between the
// chosen setting and the grid's step before it (less capacity, short of the
// target), bisect -- the setting that just reaches the target is often well
// inside the step. Only evaluated points are chosen.
absl::Status Refine(const MatchReport& report, SweepRunner& runner,
                    MatchedPolicy& m) {
  if (!m.chosen || *m.chosen == 0 || !m.sweep[*m.chosen].value ||
      Meets(report, m.sweep[*m.chosen - 1])) {
    return absl::OkStatus();
  }
  double fail = *m.sweep[*m.chosen - 1].value;
  double pass = *m.sweep[*m.chosen].value;
  // New points are kept in the sweep's order (the grid runs one way along
  // the knob, as from `fail` to `pass`).
  const bool falling = fail > pass;
  for (int i = 0; i < kMatchRefineSteps; ++i) {
    const double mid = (fail + pass) / 2;
    PL_ASSIGN_OR_RETURN(SweepPoint p, runner.Run(m.name, mid, m.unit));
    (Meets(report, p) ? pass : fail) = mid;
    const auto at =
        std::find_if(m.sweep.begin(), m.sweep.end(), [&](const SweepPoint& q) {
          return falling ? *q.value < mid : *q.value > mid;
        });
    m.sweep.insert(at, p);
  }
  Choose(report, m);
  return absl::OkStatus();
}

// Where pilotlight's defaults stand on `axis` (`x`), a baseline's sweep is
// read linearly between its neighbouring points (verdict.h), and its
// frontier is seldom a line: a keep-alive's cost against its cold-start
// share bends, so the line between 2 h and 4 h overstates what 3 h costs.
// Between each pair of neighbouring settings whose runs lie either side
// of x, bisect the knob, keeping the half that still brackets x: the
// frontier is then read between runs close to pilotlight's point. Only
// evaluated points enter the sweep, in its order.
absl::Status RefineAround(SweepRunner& runner, MatchedPolicy& m,
                          FrontierAxis axis, double x) {
  const double at = FrontierKey(axis, x);
  const auto brackets = [&](const SweepPoint& a, const SweepPoint& b) {
    return Straddles(FrontierKey(axis, a), FrontierKey(axis, b), at);
  };
  for (size_t i = 1; i < m.sweep.size(); ++i) {
    if (!m.sweep[i - 1].value || !m.sweep[i].value ||
        !brackets(m.sweep[i - 1], m.sweep[i])) {
      continue;
    }
    SweepPoint lo = m.sweep[i - 1];
    SweepPoint hi = m.sweep[i];
    const bool falling = *lo.value > *hi.value;
    for (int step = 0; step < kFrontierRefineSteps; ++step) {
      const double mid = (*lo.value + *hi.value) / 2;
      PL_ASSIGN_OR_RETURN(SweepPoint p, runner.Run(m.name, mid, m.unit));
      const auto pos = std::find_if(
          m.sweep.begin(), m.sweep.end(), [&](const SweepPoint& q) {
            return q.value && (falling ? *q.value < mid : *q.value > mid);
          });
      i = static_cast<size_t>(m.sweep.insert(pos, p) - m.sweep.begin());
      (brackets(lo, p) ? hi : lo) = p;
    }
    // Go on past the bracket just refined.
    while (i < m.sweep.size() && *m.sweep[i].value != *hi.value) {
      ++i;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MatchReport> MatchSlo(
    const Trace& trace, const SimConfig& config,
    const std::vector<std::string>& policies, double target,
    const std::function<void(double, const std::string&)>& progress) {
  MatchReport report;
  report.target = target;
  report.max_cold_start_fraction = config.spec.slo.max_cold_start_fraction;
  const std::vector<std::string> names =
      policies.empty() ? PolicyNames() : policies;
  SweepRunner runner(trace, config, names, progress);
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
      PL_ASSIGN_OR_RETURN(SweepPoint p, runner.Run(n, v, m.unit));
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
  // Each online baseline's sweep, refined where pilotlight at its defaults
  // stands (the verdict reads it there).
  const auto pl = std::find_if(
      report.policies.begin(), report.policies.end(),
      [](const MatchedPolicy& m) { return m.name == "pilotlight"; });
  const std::optional<PolicyKnob> pl_knob = KnobOf("pilotlight");
  const SweepPoint* pl_default = nullptr;
  if (pl != report.policies.end() && pl_knob) {
    for (const SweepPoint& q : pl->sweep) {
      if (q.value == pl_knob->default_value) {
        pl_default = &q;
      }
    }
  }
  if (pl_default != nullptr) {
    const SweepPoint at = *pl_default;
    for (MatchedPolicy& m : report.policies) {
      if (IsOnlineBaseline(m.name)) {
        PL_RETURN_IF_ERROR(RefineAround(runner, m, FrontierAxis::kAttainment,
                                        at.slo_attainment));
        PL_RETURN_IF_ERROR(RefineAround(runner, m, FrontierAxis::kColdShare,
                                        at.cold_start_fraction));
      }
    }
  }
  for (MatchedPolicy& m : report.policies) {
    Choose(report, m);
    PL_RETURN_IF_ERROR(Refine(report, runner, m));
  }
  return report;
}

}  // namespace pilotlight::sim
