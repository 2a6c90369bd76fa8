#include "controller/sim/verdict.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/sim/simulator.h"

namespace pilotlight::sim {

namespace {

// Shares are compared to within a rounding error, costs to within a part
// in a billion: a tie is a tie.
constexpr double kShareEps = 1e-12;
bool CostBelow(double a, double b) { return a < b - 1e-9 * std::max(1.0, b); }
bool CostAtMost(double a, double b) { return !CostBelow(b, a); }

// `a` is no worse than `b` on cost, attainment and cold-start share, and
// better on one.
bool Dominates(const SweepPoint& a, const SweepPoint& b) {
  const bool no_worse =
      CostAtMost(a.cost_usd, b.cost_usd) &&
      a.slo_attainment >= b.slo_attainment - kShareEps &&
      a.cold_start_fraction <= b.cold_start_fraction + kShareEps;
  const bool better = CostBelow(a.cost_usd, b.cost_usd) ||
                      a.slo_attainment > b.slo_attainment + kShareEps ||
                      a.cold_start_fraction < b.cold_start_fraction - kShareEps;
  return no_worse && better;
}

// "1.20x", or `none` where the baseline cost nothing (no ratio).
std::string Times(const std::optional<double>& ratio, const char* none) {
  return ratio ? absl::StrFormat("%.2fx", *ratio) : none;
}

bool Same(const SweepPoint& a, const SweepPoint& b) {
  return a.cost_usd == b.cost_usd && a.slo_attainment == b.slo_attainment &&
         a.cold_start_fraction == b.cold_start_fraction;
}

std::string Describe(const PolicyRun& r) {
  return absl::StrFormat("%s (%s): $%.2f, %.2f %% within SLO, %.2f %% cold",
                         r.policy, r.setting, r.point.cost_usd,
                         100 * r.point.slo_attainment,
                         100 * r.point.cold_start_fraction);
}

// Every run of a baseline a user could run instead, without repeats (a
// sweep's default setting is also the policy's default run).
std::vector<PolicyRun> BaselineRuns(const RunReport& defaults,
                                    const MatchReport* match) {
  std::vector<PolicyRun> runs;
  for (const PolicyResult& p : defaults.policies) {
    if (IsBaseline(p.name)) {
      const SimResult& s = p.result;
      runs.push_back({p.name, "default",
                      SweepPoint{std::nullopt, s.cost_usd, SloAttainment(s),
                                 ColdStartFraction(s), s.ttft.Quantile(0.99)}});
    }
  }
  if (match == nullptr) {
    return runs;
  }
  for (const MatchedPolicy& m : match->policies) {
    if (!IsBaseline(m.name)) {
      continue;
    }
    for (const SweepPoint& q : m.sweep) {
      const bool seen =
          std::any_of(runs.begin(), runs.end(), [&](const PolicyRun& r) {
            return r.policy == m.name && Same(r.point, q);
          });
      if (!seen) {
        runs.push_back({m.name, SettingLabel(m, q), q});
      }
    }
  }
  return runs;
}

// The matched-SLO and frontier parts, for a verdict not yet beaten.
void JudgeAtTarget(const MatchReport& match, Verdict& v) {
  v.swept = true;
  v.target = match.effective;
  v.max_cold_start_fraction = match.max_cold_start_fraction;
  const SweepPoint& p = v.pilotlight;
  v.pilotlight_meets_target =
      p.slo_attainment >= v.target - kShareEps &&
      p.cold_start_fraction <= v.max_cold_start_fraction + kShareEps;
  for (const MatchedPolicy& m : match.policies) {
    if (!IsOnlineBaseline(m.name)) {
      continue;
    }
    if (m.chosen) {
      const SweepPoint& q = m.sweep[*m.chosen];
      if (!v.cheapest_matched ||
          CostBelow(q.cost_usd, v.cheapest_matched->point.cost_usd)) {
        v.cheapest_matched = PolicyRun{m.name, SettingLabel(m, q), q};
      }
    }
    if (m.sweep.size() >= 2) {
      v.frontier.push_back(
          {m.name,
           FrontierCostAt(m.sweep, FrontierAxis::kAttainment, p.slo_attainment),
           FrontierCostAt(m.sweep, FrontierAxis::kColdShare,
                          p.cold_start_fraction)});
    }
  }
  if (v.cheapest_matched && v.pilotlight_meets_target &&
      v.cheapest_matched->point.cost_usd > 0) {
    v.matched_ratio = p.cost_usd / v.cheapest_matched->point.cost_usd;
  }
  if (v.beaten) {
    return;
  }
  if (v.cheapest_matched) {
    const PolicyRun& c = *v.cheapest_matched;
    if (!v.pilotlight_meets_target) {
      v.beaten = true;
      v.why = absl::StrFormat(
          "misses the target (%.2f %% within SLO, at most %.2f %% cold) that "
          "%s meets",
          100 * v.target, 100 * v.max_cold_start_fraction, Describe(c));
      return;
    }
    if (CostBelow(c.point.cost_usd, p.cost_usd)) {
      v.beaten = true;
      v.why = absl::StrFormat("costs %s %s, tuned on this trace",
                              Times(v.matched_ratio, "more than"), Describe(c));
      return;
    }
    v.why = absl::StrFormat(
        "is dominated by no run and meets the target at %s the cheapest "
        "baseline tuned on this trace, %s",
        Times(v.matched_ratio, "the cost of"), Describe(c));
    return;
  }
  for (const FrontierCost& f : v.frontier) {
    for (const auto& [cost, what] :
         {std::pair{f.at_attainment, "attainment"},
          std::pair{f.at_cold_share, "cold-start share"}}) {
      if (cost && CostBelow(*cost, p.cost_usd)) {
        v.beaten = true;
        v.why = absl::StrFormat(
            "lies above %s's sweep: at pilotlight's %s it costs $%.2f, "
            "pilotlight $%.2f",
            f.policy, what, *cost, p.cost_usd);
        return;
      }
    }
  }
  v.why =
      "is dominated by no run; no online baseline meets the target, and it "
      "lies on or below every baseline's sweep at its own attainment and "
      "cold-start share";
}

}  // namespace

bool IsBaseline(const std::string& policy) {
  return policy != "pilotlight" && policy != "oracle";
}

bool IsOnlineBaseline(const std::string& policy) {
  return IsBaseline(policy) && policy != "always-on";
}

double FrontierKey(FrontierAxis axis, double value) {
  return axis == FrontierAxis::kAttainment ? value : -value;
}

double FrontierKey(FrontierAxis axis, const SweepPoint& p) {
  return FrontierKey(axis, axis == FrontierAxis::kAttainment
                               ? p.slo_attainment
                               : p.cold_start_fraction);
}

bool Straddles(double a, double b, double at) {
  return (a < at && b > at) || (b < at && a > at);
}

std::optional<double> FrontierCostAt(const std::vector<SweepPoint>& sweep,
                                     FrontierAxis axis, double x) {
  const auto key = [&](const SweepPoint& q) { return FrontierKey(axis, q); };
  const double at = FrontierKey(axis, x);
  std::optional<double> best;
  const auto offer = [&](double cost) {
    if (!best || cost < *best) {
      best = cost;
    }
  };
  for (size_t i = 0; i < sweep.size(); ++i) {
    if (key(sweep[i]) >= at - kShareEps) {
      offer(sweep[i].cost_usd);
    }
    if (i == 0) {
      continue;
    }
    // The segment to the previous point, where it crosses x.
    const SweepPoint& a = sweep[i - 1];
    const SweepPoint& b = sweep[i];
    const double ka = key(a);
    const double kb = key(b);
    if (Straddles(ka, kb, at)) {
      const double t = (at - ka) / (kb - ka);
      offer(a.cost_usd + t * (b.cost_usd - a.cost_usd));
    }
  }
  return best;
}

std::optional<Verdict> Judge(const RunReport& defaults,
                             const MatchReport* match) {
  const auto own = std::find_if(
      defaults.policies.begin(), defaults.policies.end(),
      [](const PolicyResult& p) { return p.name == "pilotlight"; });
  if (own == defaults.policies.end()) {
    return std::nullopt;
  }
  Verdict v;
  const SimResult& s = own->result;
  v.pilotlight = SweepPoint{std::nullopt, s.cost_usd, SloAttainment(s),
                            ColdStartFraction(s), s.ttft.Quantile(0.99)};
  for (PolicyRun& r : BaselineRuns(defaults, match)) {
    if (Dominates(r.point, v.pilotlight)) {
      v.dominated_by.push_back(std::move(r));
    }
  }
  std::stable_sort(v.dominated_by.begin(), v.dominated_by.end(),
                   [](const PolicyRun& a, const PolicyRun& b) {
                     return a.point.cost_usd < b.point.cost_usd;
                   });
  if (!v.dominated_by.empty()) {
    v.beaten = true;
    v.why = absl::StrCat("is dominated by ", Describe(v.dominated_by.front()));
  } else {
    v.why = "is dominated by no run (no matched-SLO sweep was run)";
  }
  if (match != nullptr) {
    JudgeAtTarget(*match, v);
  }
  return v;
}

}  // namespace pilotlight::sim
