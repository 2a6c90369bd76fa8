#include "controller/policy/tier_chooser.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"

namespace pilotlight::policy {

void TierChooser::Reset() {
  tier_ = -1;
  switching_from_ = -1;
  candidate_tier_ = -1;
}

void TierChooser::Adopt(const TierTable& tiers, const Snapshot& s) {
  int most = -1;
  for (size_t i = 0; i < s.variants.size(); ++i) {
    const int n = std::max(s.variants[i].desired, s.variants[i].ready);
    if (n > most) {
      most = n;
      tier_ = tiers.variant(static_cast<int>(i)).tier;
    }
  }
}

TierChoice TierChooser::Choose(const TierTable& tiers,
                               const VariantSplitter& splitter,
                               const Snapshot& s, const DemandForecast& f,
                               absl::Time now, const DeciderConfig& config) {
  TierChoice c;
  const double util = config.target_utilization;
  const auto plan = [&](int t) {
    return splitter.Plan(tiers, s, t, tiers.ReplicasFor(t, f.forecast, util),
                         f.stable, c.spot_unhealthy[static_cast<size_t>(t)],
                         util);
  };
  int best = -1;
  double best_cost = std::numeric_limits<double>::infinity();
  c.spot_unhealthy.assign(tiers.size(), false);
  for (size_t t = 0; t < tiers.size(); ++t) {
    const int ti = static_cast<int>(t);
    c.spot_unhealthy[t] = tiers.SpotUnhealthy(s, ti, now, config);
    const TierPlan p = plan(ti);
    c.options.push_back({.gpu_class = tiers.tier(ti).gpu_class,
                         .replicas = p.replicas,
                         .on_demand = p.on_demand,
                         .spot = p.spot,
                         .capacity_per_replica = tiers.Capacity(ti),
                         .cost_per_hour = p.cost_per_hour,
                         .meets_slo = p.meets_slo});
    if (p.meets_slo && p.cost_per_hour < best_cost) {
      best = ti;
      best_cost = p.cost_per_hour;
    }
  }
  best = std::max(best, 0);  // none meets it: the first, reported as such
  int asked = 0;
  for (const VariantState& v : s.variants) {
    asked += std::max(v.desired, v.ready);
  }
  if (asked == 0 && switching_from_ < 0) {
    tier_ = best;  // nothing running: choose freely
    candidate_tier_ = -1;
  } else if (tier_ < 0) {
    Adopt(tiers, s);
  }
  if (switching_from_ >= 0 || best == tier_) {
    candidate_tier_ = -1;
    return c;
  }
  const TierPlan cur = plan(tier_);
  const bool must = !cur.meets_slo;
  const bool cheaper =
      best_cost <= (1 - config.tier_switch_min_saving) * cur.cost_per_hour;
  if (!must && !cheaper) {
    candidate_tier_ = -1;
    return c;
  }
  if (candidate_tier_ != best) {
    candidate_tier_ = best;
    candidate_since_ = now;
  }
  if (must || now - candidate_since_ >= config.tier_switch_sustain) {
    c.note = absl::StrFormat(
        "%s -> %s: %s", tiers.tier(tier_).gpu_class, tiers.tier(best).gpu_class,
        must ? "current tier cannot meet the SLO"
             : absl::StrFormat("$%.2f/h vs $%.2f/h for %s", best_cost,
                               cur.cost_per_hour,
                               MessageSeconds(now - candidate_since_)));
    switching_from_ = tier_;
    tier_ = best;
    candidate_tier_ = -1;
  }
  return c;
}

}  // namespace pilotlight::policy
