// VariantSplitter: a tier's replicas split over its on-demand and spot
// variants (rule 8). Realtime keeps what its current demand needs (and the
// minimum) on on-demand and puts the rest on spot where spot is cheaper;
// Batch puts all on spot. While a spot class is unhealthy, on-demand
// replaces the spot replicas that are not ready (the fallback, remembered
// per tier until spot is ready again), and ready replicas of one type stay
// while those meant to replace them start (make-before-break).
#pragma once

#include <cstddef>
#include <vector>

#include "controller/policy/decision.h"
#include "controller/policy/snapshot.h"
#include "controller/policy/tier_table.h"

namespace pilotlight::policy {

struct TierPlan {
  int replicas = 0;
  int on_demand = 0;
  int spot = 0;
  double cost_per_hour = 0;
  bool meets_slo = false;
};

// One decision's split, for the per-variant answers.
struct SplitRequest {
  int tier = 0;             // serving
  int switching_from = -1;  // the tier a switch leaves, -1: none
  int target = 0;           // replicas on `tier`
  ScaleReason reason = ScaleReason::kSteady;
  double demand = 0;  // current (stable-window) concurrency
  bool spot_unhealthy = false;
};

class VariantSplitter {
 public:
  // Forgets the fallback state (the tiers were rebuilt).
  void Reset(size_t tiers) { fallback_.assign(tiers, false); }

  // `replicas` of tier `t` split over its variants for `demand`, and
  // priced. `keep_ready`: when the replicas fit in the ready ones, keep
  // those (an idle endpoint's kept replica never moves between capacity
  // types).
  TierPlan Plan(const TierTable& tiers, const Snapshot& s, int t, int replicas,
                double demand, bool spot_unhealthy, double target_utilization,
                bool keep_ready = false) const;
  // Plan for the decision's target on the serving tier; starts or ends
  // that tier's fallback.
  TierPlan Split(const TierTable& tiers, const Snapshot& s,
                 const SplitRequest& r, double target_utilization, bool idle);
  // The per-variant answers for `plan` into `d` (with their cost): the
  // serving tier's variants as planned, the tier switched from kept until
  // the new one is ready for the target, every other at zero. Returns
  // whether the tier switched from has drained (true with no switch).
  bool Assign(const TierTable& tiers, const Snapshot& s, const SplitRequest& r,
              const TierPlan& plan, double target_utilization,
              Decision& d) const;

  bool fallback(int t) const { return fallback_[static_cast<size_t>(t)]; }
  size_t HeapBytes() const { return fallback_.capacity() / 8; }

 private:
  std::vector<bool> fallback_;  // per tier: on-demand replacing missing spot
};

}  // namespace pilotlight::policy
