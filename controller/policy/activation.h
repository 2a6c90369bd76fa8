// ActivationRule: how long the activator holds a request for a replica
// before it answers 503 -- `factor` x the endpoint's predicted cold start
// (the controller's status.coldStart.leadSeconds) + `margin`, at most
// `max`. One rule for the live activator (activator/targets.h) and the
// simulator's model of it (sim/simulator.h), so the two cannot drift; so
// are the Retry-After values the activator sends with its refusals, which
// clients that retry (the OpenAI SDKs honour it) wait before trying again.
#pragma once

#include <algorithm>

#include "absl/time/time.h"

namespace pilotlight::policy {

// Retry-After, seconds: 429, the hold is full; 503, no replica within the
// activation timeout.
inline constexpr int kRetryAfterHoldFullS = 1;
inline constexpr int kRetryAfterActivationTimeoutS = 5;

struct ActivationRule {
  double factor = 1.5;
  absl::Duration margin = absl::Seconds(30);
  absl::Duration max = absl::Minutes(20);

  // `sleep_pool`: the endpoint's first replica from zero is an engine in a
  // sleep pool, whose wake the controller waits on for a cold start's lead
  // before it starts one of the endpoint's own when the wake stalls
  // (docs/operator.md, "Sleep pools"): a lead more.
  absl::Duration For(absl::Duration predicted_cold_start,
                     bool sleep_pool = false) const {
    return std::min(
        max, predicted_cold_start * (factor + (sleep_pool ? 1 : 0)) + margin);
  }
};

}  // namespace pilotlight::policy
