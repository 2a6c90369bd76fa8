// LeaderElector: one controller leads at a time, through a
// coordination.k8s.io/v1 Lease, with client-go's algorithm and timings
// (lease 15 s, renew deadline 10 s, retry 2 s with jitter 1.2): a lease is
// judged expired on the LOCAL clock (when its record last changed + lease
// duration), never on the renewTime written by another machine; a takeover
// increments leaseTransitions; a leader that cannot renew within the renew
// deadline stops leading. Release() hands the lease over at once (empty
// holder) on a clean shutdown.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/kube/clock.h"
#include "controller/kube/kube_client.h"

namespace pilotlight::kube {

struct LeaderElectionConfig {
  std::string lease_namespace = "pilotlight-system";
  std::string lease_name = "pilotlight-controller";
  std::string identity;  // unique per process, e.g. pod name + random
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
};

// LeaseDuration > RenewDeadline > 1.2 x RetryPeriod, identity set.
absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c);

class LeaderElector {
 public:
  // `client` is this elector's own (not shared with other threads).
  LeaderElector(KubeClient& client, LeaderElectionConfig config,
                const Clock& clock);

  // One attempt to take or renew the lease. True when we hold it after.
  bool TryAcquireOrRenew();

  // Loops until `stop`: acquires (every retry period, jittered), calls
  // `on_started`, renews, and calls `on_stopped` when renewal fails past
  // the deadline (then tries to acquire again). Releases on stop if
  // leading.
  void Run(const std::atomic<bool>& stop,
           const std::function<void()>& on_started,
           const std::function<void()>& on_stopped);

  void Release();
  bool IsLeader() const { return leader_.load(); }
  const std::string& last_error() const { return last_error_; }

 private:
  std::string LeasePath() const;
  // No Lease yet: creates it, held by this identity (false when the POST
  // fails, e.g. another candidate created it first).
  bool Create(absl::Time now, int64_t duration_s);
  void SleepUnless(const std::atomic<bool>& stop, absl::Duration d);

  KubeClient& client_;
  const LeaderElectionConfig config_;
  const Clock& clock_;
  std::atomic<bool> leader_{false};
  std::string observed_record_;  // holder|renewTime|transitions last seen
  absl::Time observed_time_ = absl::InfinitePast();
  std::string last_error_;
  uint64_t jitter_state_;
};

}  // namespace pilotlight::kube
