// ScaleDownGovernor: how fast the target may fall (rule 6). The load target
// is the maximum of the last max(stabilisation, cold-start lead, learned
// hold) -- the learned hold keeps replicas above the first while the
// endpoint's own re-needs of them say they come back soon -- and falls by
// at most max_scale_down_rate per call, never while panicking, nor while
// demand is partly out of sight, every slot is busy or demand is above its
// stable average. With coarse billing no replica is released inside a
// period it has paid for. The spec's bounds always hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/decision.h"
#include "controller/policy/endpoint_spec.h"
#include "controller/policy/idle_histogram.h"
#include "controller/policy/time_window.h"

namespace pilotlight::policy {

// What one decision asks of the governor.
struct GovernorInput {
  absl::Time now;
  int load = 0;  // replicas for the forecast
  int warm = 0;  // the warm pool above them
  ScaleReason load_reason = ScaleReason::kSteady;
  bool idle = false;
  int idle_floor = 0;  // the replica the keep-alive or pre-warm keeps
  ScaleReason idle_reason = ScaleReason::kScaledToZero;
  int ready = 0;           // replicas ready, every variant
  absl::Duration lead;     // the serving tier's cold-start lead
  int tier = 0;            // serving
  int tier_desired = 0;    // the serving tier's variants' desired replicas
  absl::Duration billing;  // the serving tier's billing period
  bool partial = false;    // demand partly out of sight
  bool saturated = false;  // every ready slot busy, requests held
  bool rising = false;     // the panic window's demand above the stable's
  bool panic = false;
};

struct ScaleTarget {
  int target = 0;
  ScaleReason reason = ScaleReason::kSteady;
  // The stabilisation window (or a paid period) keeps the target above
  // what load and warm pool ask.
  bool scale_down_delayed = false;
  absl::Duration stabilisation;          // the window's span this call
  std::optional<absl::Time> paid_until;  // a billing period's end, if any
};

class ScaleDownGovernor {
 public:
  ScaleDownGovernor();

  ScaleTarget Govern(const GovernorInput& in, const EndpointSpec& spec,
                     const DeciderConfig& config);
  // Records what `n` quiet decisions at first, first + step, ... would
  // have recorded in the stabilisation window.
  void SkipQuiet(absl::Time first, absl::Duration step, int64_t n);

  size_t HeapBytes() const;

  // The stabilisation window's reach (its maximum span): the longest
  // learned hold.
  static constexpr absl::Duration kReach = absl::Minutes(30);

 private:
  // The target the stabilisation window (and, idle, the keep-alive) keeps.
  ScaleTarget Stabilise(const GovernorInput& in, const EndpointSpec& spec,
                        const DeciderConfig& config);
  // The rate limit, panic, partial and saturated demand, and the bounds,
  // against the total asked for last time.
  void Limit(const GovernorInput& in, const EndpointSpec& spec,
             const DeciderConfig& config, ScaleTarget& t) const;
  void TrackReneeds(int before, int now_target, absl::Time now);
  absl::Duration LearnedHold(const EndpointSpec& spec) const;
  // The target kept up for the periods already paid.
  int PaidFloor(const GovernorInput& in, const DeciderConfig& config,
                ScaleTarget& t) const;
  void RecordLevels(int target, absl::Time now, absl::Duration billing);

  WindowedMax load_targets_;
  int last_raw_target_ = 0;  // load + warm, last call
  int last_target_ = -1;     // the total asked for last time, on that tier
  int last_target_tier_ = -1;

  // The learned hold: per level k >= 2 (index k - 2, up to kTrackedLevels),
  // when the load target last fell below it; the gaps until it was needed
  // again; the calls that recorded a gap (its evidence, up to
  // IdleHistogram::kMinSamples).
  static constexpr int kTrackedLevels = 64;
  std::vector<absl::Time> dropped_at_;  // InfiniteFuture: not pending
  IdleHistogram reneed_gaps_;
  int reneed_events_ = 0;

  // Billing: when each replica level (index k - 1) was started; a level is
  // released only near the end of a paid period.
  std::vector<absl::Time> level_started_;
};

}  // namespace pilotlight::policy
