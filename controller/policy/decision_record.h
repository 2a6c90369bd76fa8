// DecisionRecord: one decision with everything the decider saw for it --
// the demand samples, each variant's replicas and learned cold start -- as
// one JSON line. The controller (`--decision-log`) and the simulator
// (`simulate --decision-log`) write the same records, so a live run and its
// simulation can be compared input by input, and any decision replayed.
// Pure: builds a string.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/policy/decision.h"
#include "controller/policy/snapshot.h"

namespace pilotlight::policy {

// Times are seconds since `origin` (the Unix epoch live; the trace's start
// in the simulator), to the millisecond. Fields:
//   t, endpoint, samples [{at, in_flight, queued, arrivals, partial}] (an
//   absent figure is null), variants [{desired, ready, starting,
//   terminating, cold_start_p90_s, cold_start_samples, node_free}],
//   replicas [per variant], reason, message.
std::string DecisionRecord(absl::string_view endpoint, const Snapshot& s,
                           const Decision& d, absl::Time now,
                           absl::Time origin);

}  // namespace pilotlight::policy
