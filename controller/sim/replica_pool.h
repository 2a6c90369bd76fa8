// ReplicaPool: the replicas of one replay -- requested -> starting -> ready
// -> draining -> gone -- with their billing, the zones spot replicas spread
// over and the preemptions that take a zone's spot replicas, and which
// replica goes first when a variant scales down.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "controller/policy/snapshot.h"
#include "controller/sim/pool_occupancy.h"
#include "controller/sim/service_model.h"
#include "controller/sim/sim_config.h"

namespace pilotlight::sim {

struct Replica {
  int variant = 0;
  enum class State {
    kStarting,
    kReady,
    kDraining,
    kGone
  } state = State::kStarting;
  double requested_s = 0;
  double ready_s = 0;
  int busy = 0;
  int zone = 0;
  bool preempted = false;  // taken while busy: its requests start over
  // Its zone's preemption was announced (SimConfig::spot_notice): the
  // policy sees it gone, and it serves until its replacements are Ready.
  bool leaving = false;
  bool woken = false;  // an engine asleep, woken (SimConfig::sleep)
};

// A spot preemption: every replica of `variant` in `zone`, at `t`.
struct Preemption {
  double t;
  int variant;
  int zone;
};

class ReplicaPool {
 public:
  // Cost and GPU time are counted from `measure_from_s`.
  ReplicaPool(const SimConfig& config, const std::vector<ServiceModel>& models,
              double measure_from_s);

  // A replica of `variant` asked for at `t`, ready `cold_s` after it is
  // placed: spot replicas spread round-robin over the zones with capacity
  // at `t` (with none, it waits in its turn's zone until capacity returns).
  // With an engine of the variant asleep (SimConfig::sleep), that engine
  // wakes instead: ready SleepTier::wake after `t`.
  void Start(int variant, double t, double cold_s);
  // A replica of `variant` up and Ready at `t` (the replay begins with
  // it): billed from `t`, no cold start of its own.
  void StartReady(int variant, double t);
  // When the next starting replica becomes ready (infinity: none).
  double NextReady() const {
    return starting_.empty() ? std::numeric_limits<double>::infinity()
                             : starting_.top().first;
  }
  // That replica becomes ready at `t`: its id, or -1 when it was stopped
  // meanwhile.
  int PopReady(double t);
  // Gone at `t`: billed up to then, rounded up to the billing period.
  // `may_sleep` (a replica released, not one taken or at the replay's
  // end): a ready one goes to sleep instead while its variant keeps fewer
  // engines asleep than KeepAsleep asked.
  void Stop(int id, double t, bool may_sleep = false);
  // Variant `v` keeps `n` engines asleep from `t`: those beyond go.
  void KeepAsleep(int v, int n, double t);
  // Every engine asleep goes at `t` (the replay's end), billed until then.
  void EndSleep(double t);
  // Engines woken so far.
  int64_t wakes() const { return wakes_; }
  // Each change of the engines asleep and of the woken ones awake.
  const std::vector<PoolChange>& pool_changes() const { return pool_changes_; }
  // Scales variant `v` down to `want` at `now`: starting replicas first
  // (newest first), then idle ready ones (newest first, as a ReplicaSet
  // picks), then the least busy drain -- or, `by_paid_time`, the one with
  // the least paid time left first, whatever its state. Returns how many
  // must be started instead (0 when it scaled down or had enough).
  int Scale(int v, int want, double now, bool by_paid_time);

  // The preemptions a replay starting at `from` meets (seeded).
  std::vector<Preemption> SchedulePreemptions(double from, double end) const;
  // Takes the replicas `p` names; their zone places no spot replica for
  // SimConfig::spot_zone_outage. Returns how many it took.
  int Preempt(const Preemption& p);
  // The notice of `p`: the replicas it will take are leaving -- left out
  // of Scale's count and of Observe, sent requests only while no other
  // replica is ready -- and their zone places no new spot replica until
  // the preemption's outage ends. Returns how many.
  int Notice(const Preemption& p);
  // Stops (idle) or drains (busy) each variant's leaving replicas once
  // policy::ReplicasWithLeaving says they are replaced: `want` per
  // variant, the endpoint's need their sum.
  void ReleaseLeaving(const std::vector<int>& want, double now);

  Replica& replica(int id) { return replicas_[static_cast<size_t>(id)]; }
  // The ready replica with a free slot and the fewest busy, -1: none.
  // Leaving replicas only while no other is ready (as the activator's
  // targets).
  int LeastBusyFree() const {
    int best = -1;
    const bool others = ready_count_ > leaving_ready_;
    for (int id : live_ids_) {
      const Replica& r = replicas_[static_cast<size_t>(id)];
      if (r.state != Replica::State::kReady ||
          r.busy >= models_[static_cast<size_t>(r.variant)].slots ||
          (r.leaving && others)) {
        continue;
      }
      if (best < 0 || r.busy < replicas_[static_cast<size_t>(best)].busy) {
        best = id;
      }
    }
    return best;
  }
  bool FreeSlot() const { return LeastBusyFree() >= 0; }
  // Every replica not gone is ready.
  bool AllReady() const;
  int ready() const { return ready_count_; }
  int starting() const { return starting_count_; }
  int live() const { return static_cast<int>(live_ids_.size()); }
  // Ids of the replicas not gone, oldest first.
  const std::vector<int>& live_ids() const { return live_ids_; }
  // Fills each variant's ready, starting and draining replicas (the
  // starting ones' creation times from `epoch`); returns the GPUs held.
  double Observe(std::vector<policy::VariantState>& variants,
                 absl::Time epoch) const;
  // Billed so far, and what the replicas up now cost until `t`.
  double billed_cost() const { return billed_cost_; }
  // Of it, engines asleep (their share of the pool) and woken ones.
  double asleep_cost() const { return asleep_cost_; }
  double woken_cost() const { return woken_cost_; }
  double RunningCost(double t) const;
  double gpu_seconds() const { return gpu_seconds_; }

 private:
  bool IsSpot(int variant) const;

  const SimConfig& config_;
  const std::vector<ServiceModel>& models_;
  const double measure_from_s_;
  std::vector<Replica> replicas_;
  std::vector<int> live_ids_;  // every replica not gone (any state)
  int ready_count_ = 0;
  int leaving_ready_ = 0;   // of them, leaving
  int starting_count_ = 0;  // asked for and not yet ready (or gone)
  std::priority_queue<std::pair<double, int>,
                      std::vector<std::pair<double, int>>, std::greater<>>
      starting_;                                   // (ready time, id)
  std::vector<int> next_zone_;                     // per variant
  std::vector<std::vector<double>> zone_free_at_;  // per variant, per zone
  double billed_cost_ = 0;
  double asleep_cost_ = 0;
  double woken_cost_ = 0;
  double gpu_seconds_ = 0;
  // Per variant: when each engine asleep fell asleep, and how many to keep.
  std::vector<std::vector<double>> asleep_since_;
  std::vector<int> keep_asleep_;
  int64_t wakes_ = 0;
  std::vector<PoolChange> pool_changes_;
  // What an engine asleep from `since` until `t` costs (after the
  // warm-up), and that billed.
  double AsleepCost(double since, double t) const;
  void BillAsleep(double since, double t);
};

}  // namespace pilotlight::sim
