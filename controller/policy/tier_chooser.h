// TierChooser: the GPU tier that serves (rule 7) -- the cheapest meeting
// the SLO at the forecast, switched to only after it has saved enough for
// long enough (at once when the current tier cannot meet the SLO), and
// made before the old tier is broken: the tier switched from keeps serving
// until the new one is ready (VariantSplitter::Assign says when).
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/decision.h"
#include "controller/policy/demand_forecaster.h"
#include "controller/policy/snapshot.h"
#include "controller/policy/tier_table.h"
#include "controller/policy/variant_splitter.h"

namespace pilotlight::policy {

struct TierChoice {
  std::vector<bool> spot_unhealthy;  // per tier
  std::vector<TierOption> options;   // every tier priced for the forecast
  std::string note;                  // set when a switch starts
};

class TierChooser {
 public:
  // Forgets the tier and any switch (the tiers were rebuilt).
  void Reset();

  // Prices every tier for the forecast and moves serving() when the rule
  // says so.
  TierChoice Choose(const TierTable& tiers, const VariantSplitter& splitter,
                    const Snapshot& s, const DemandForecast& f, absl::Time now,
                    const DeciderConfig& config);
  // The switch under way has drained the tier it left.
  void SwitchDone() { switching_from_ = -1; }

  int serving() const { return tier_; }  // -1 before the first choice
  int switching_from() const { return switching_from_; }  // -1: none
  // A cheaper tier is being watched for the sustain period.
  bool weighing() const { return candidate_tier_ >= 0; }

 private:
  // Adopts the tier with the most replicas running (a controller restart
  // with replicas up): a move is then a normal switch.
  void Adopt(const TierTable& tiers, const Snapshot& s);

  int tier_ = -1;
  int switching_from_ = -1;
  int candidate_tier_ = -1;
  absl::Time candidate_since_;
};

}  // namespace pilotlight::policy
