// ActivatorDemand: what the activators report (proto/pilotlight/v1/
// demand.proto, received by api::DemandService), per activator and
// endpoint, and what the reconciler reads of it:
//
//   - held requests and their bytes, requests in flight, the oldest wait
//     (summed over activators);
//   - arrivals since the endpoint's previous read (reports carry totals
//     since each activator started, so a lost report loses nothing, and a
//     restarted activator -- a new incarnation -- starts from zero; an
//     activator that started before this controller is counted from its
//     first report here: what it counted before is not a burst of demand);
//   - wakes of its pool engines refused since the previous read (totals,
//     as arrivals);
//   - pokes: an endpoint holding requests with no ready replica, or one
//     whose engine's wake was refused, is reconciled at once (Apply
//     returns it) and its epoch moves, so the reconciler decides on the
//     held demand without waiting for a tick.
//
// An activator whose stream broke (not after a draining report) is "lost"
// until it reconnects or `forget_after` passes: while any is lost, and for
// `startup_grace` after the controller starts (activators reconnecting),
// Read names it in `lost` (and sums only the connected activators' demand),
// and the merged demand marks the sample partial, so the policy scales up
// for what it sees but never down on demand it cannot see. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/api/demand_service.h"
#include "controller/kube/clock.h"

namespace pilotlight::runtime {

using api::ActivatorReport;
using api::EndpointDemand;

struct ActivatorRead {
  double held = 0;
  double in_flight = 0;
  double arrivals = 0;  // since the previous read of this endpoint
  // Wakes of its pool engines refused since the previous read.
  double wakes_refused = 0;
  double oldest_wait_seconds = 0;
  int reporting = 0;  // activators connected
  std::string lost;   // why the activators' demand cannot be trusted now
};

class ActivatorDemand {
 public:
  ActivatorDemand(const kube::Clock& clock, absl::Duration startup_grace,
                  absl::Duration forget_after);

  // Applies one report; returns the endpoints to reconcile at once.
  std::vector<std::string> Apply(const ActivatorReport& r);
  // The stream of `activator` ended; `clean`: after a draining report (the
  // activator is gone, not lost).
  void Disconnected(const std::string& activator, int64_t incarnation,
                    bool clean);

  ActivatorRead Read(const std::string& endpoint);
  // Moves when a report pokes `endpoint`.
  int64_t Epoch(const std::string& endpoint) const;
  // When `endpoint` was first poked since the last call (for the
  // poke -> /scale patch latency); unset when it was not.
  std::optional<absl::Time> TakePoke(const std::string& endpoint);
  int Connected() const;

 private:
  struct Source {
    int64_t incarnation = 0;
    bool connected = false;
    absl::Time lost_at;
    std::map<std::string, EndpointDemand> endpoints;
    std::map<std::string, int64_t> taken;  // arrivals_total already read
    std::map<std::string, int64_t> refusals_taken;  // wakes_refused_total
  };
  std::string LostLocked(absl::Time now);

  const kube::Clock& clock_;
  const absl::Time started_;
  const absl::Duration startup_grace_;
  const absl::Duration forget_after_;
  mutable std::mutex mu_;
  std::map<std::string, Source> sources_;       // by activator name
  std::map<std::string, int64_t> pokes_;        // by endpoint
  std::map<std::string, absl::Time> poked_at_;  // not yet taken
};

}  // namespace pilotlight::runtime
