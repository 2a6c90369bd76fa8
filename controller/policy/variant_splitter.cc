#include "controller/policy/variant_splitter.h"

#include <algorithm>
#include <utility>

#include "controller/base/ceil_div.h"

namespace pilotlight::policy {

TierPlan VariantSplitter::Plan(const TierTable& tiers, const Snapshot& s,
                               int tier, int replicas, double demand,
                               bool spot_unhealthy, double target_utilization,
                               bool keep_ready) const {
  const EndpointSpec& spec = *s.spec;
  const TierTable::Tier& t = tiers.tier(tier);
  TierPlan p;
  p.replicas = replicas;
  const int cap = tiers.Capacity(tier);
  p.meets_slo = cap > 0 && t.ttft_s <= absl::ToDoubleSeconds(spec.slo.ttft) &&
                CeilDiv(demand, cap * target_utilization) <= spec.max_replicas;
  // All on one variant when the tier has only one, or spot is not cheaper.
  const bool spot_only = t.on_demand < 0;
  const bool on_demand_only =
      t.spot < 0 ||
      (!spot_only && tiers.Price(t.spot) >= tiers.Price(t.on_demand));
  if (spot_only) {
    p.spot = replicas;
  } else if (on_demand_only) {
    p.on_demand = replicas;
  } else {
    int floor = 0;
    if (spec.mode == Mode::kRealtime) {
      // The SLO floor: what the current demand needs, and the minimum.
      floor = std::max(CeilDiv(demand, cap * target_utilization),
                       spec.min_replicas);
    }
    p.on_demand = std::min(replicas, floor);
    p.spot = replicas - p.on_demand;
    const int ready_od_now = s.variants[static_cast<size_t>(t.on_demand)].ready;
    const int ready_spot_all = s.variants[static_cast<size_t>(t.spot)].ready;
    if (keep_ready && replicas <= ready_od_now + ready_spot_all) {
      p.on_demand = std::min(replicas, ready_od_now);
      p.spot = replicas - p.on_demand;
    }
    // Spot fallback: on-demand replaces the spot replicas not ready.
    if (spot_unhealthy || fallback(tier)) {
      p.on_demand += std::max(0, p.spot - ready_spot_all);
    }
    // Make-before-break within the tier: ready replicas of one type stay
    // while the replicas of the other type meant to replace them start.
    const int od_missing = std::max(0, p.on_demand - ready_od_now);
    const int spot_missing = std::max(0, p.spot - ready_spot_all);
    p.spot = std::max(p.spot, std::min(ready_spot_all, p.spot + od_missing));
    p.on_demand = std::max(p.on_demand,
                           std::min(ready_od_now, p.on_demand + spot_missing));
  }
  p.cost_per_hour =
      p.on_demand * tiers.Price(t.on_demand) + p.spot * tiers.Price(t.spot);
  return p;
}

TierPlan VariantSplitter::Split(const TierTable& tiers, const Snapshot& s,
                                const SplitRequest& r,
                                double target_utilization, bool idle) {
  const TierPlan plan = Plan(tiers, s, r.tier, r.target, r.demand,
                             r.spot_unhealthy, target_utilization, idle);
  const TierTable::Tier& t = tiers.tier(r.tier);
  if (t.spot >= 0) {
    const int ready_spot = s.variants[static_cast<size_t>(t.spot)].ready;
    if (r.spot_unhealthy && plan.spot > ready_spot) {
      fallback_[static_cast<size_t>(r.tier)] = true;
    } else if (ready_spot >= plan.spot) {
      fallback_[static_cast<size_t>(r.tier)] = false;
    }
  }
  return plan;
}

bool VariantSplitter::Assign(const TierTable& tiers, const Snapshot& s,
                             const SplitRequest& r, const TierPlan& plan,
                             double target_utilization, Decision& d) const {
  const EndpointSpec& spec = *s.spec;
  const TierTable::Tier& tier = tiers.tier(r.tier);
  bool old_drained = true;
  if (r.switching_from >= 0) {
    // The new tier must be ready for its target before the old one drains.
    int new_ready = 0;
    for (int v : {tier.on_demand, tier.spot}) {
      if (v >= 0) {
        new_ready += s.variants[static_cast<size_t>(v)].ready;
      }
    }
    old_drained = new_ready >= r.target;
  }
  // On-demand beyond its floor (Realtime: what current demand needs; Batch:
  // none) while spot is unhealthy is there for the fallback.
  const int od_floor =
      spec.mode == Mode::kRealtime
          ? std::min(r.target,
                     std::max(CeilDiv(r.demand, tiers.Capacity(r.tier) *
                                                    target_utilization),
                              spec.min_replicas))
          : 0;
  const bool covering = tier.spot >= 0 && plan.on_demand > od_floor &&
                        (fallback(r.tier) || r.spot_unhealthy);
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    VariantDecision v;
    v.deployment = spec.variants[i].deployment;
    v.previous = s.variants[i].desired;
    const int vt = tiers.variant(static_cast<int>(i)).tier;
    const bool is_spot = static_cast<int>(i) == tier.spot;
    if (vt == r.tier) {
      v.replicas = is_spot ? plan.spot : plan.on_demand;
      v.reason = !is_spot && covering ? ScaleReason::kSpotFallback : r.reason;
      if (r.switching_from >= 0) {
        v.reason = ScaleReason::kTierSwitch;
      }
    } else if (vt == r.switching_from && !old_drained) {
      v.replicas = s.variants[i].desired;  // keep serving until the new is up
      v.reason = ScaleReason::kTierSwitch;
    } else {
      v.replicas = 0;
      v.reason = vt == r.switching_from ? ScaleReason::kTierSwitch
                                        : ScaleReason::kUnchanged;
    }
    if (v.replicas == v.previous && v.reason != ScaleReason::kTierSwitch &&
        v.reason != ScaleReason::kSpotFallback) {
      v.reason = ScaleReason::kUnchanged;
    }
    d.cost_per_hour +=
        v.replicas * tiers.variant(static_cast<int>(i)).price_per_replica_hour;
    d.variants.push_back(std::move(v));
  }
  return old_drained;
}

}  // namespace pilotlight::policy
