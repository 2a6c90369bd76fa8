// TierTable: an endpoint's variants grouped into tiers -- a GPU model at a
// tensor-parallel degree, served by an on-demand variant, a spot variant or
// both -- as derived from the spec and the catalog, with what the engines
// taught about each tier's speed (the calibration from their latency
// histograms and the tokens/s correction). Rebuilt when the spec's
// generation or the catalog changes; what a class learned outlives a
// rebuild that keeps the model.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "controller/model/calibration.h"
#include "controller/model/sizing.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/snapshot.h"
#include "controller/policy/variant_model.h"

namespace pilotlight::policy {

class TierTable {
 public:
  struct Variant {
    int tier = 0;
    double price_per_replica_hour = 0;
    absl::Duration lead_estimate;      // the cold-start model's, node free
    absl::Duration node_provisioning;  // added while no node is free
    absl::Duration billing;            // its class's, else the config's
  };
  struct Tier {
    std::string gpu_class;  // of its first variant
    std::string gpu_model;
    int on_demand = -1;  // variant index
    int spot = -1;
    std::optional<model::ReplicaModel> replica;
    int model_capacity = 0;  // at the TPOT SLO, uncorrected
    double ttft_s = 0;
    double correction = 1.0;  // measured / predicted decode speed
    // Observed / predicted step times from the engines' histograms.
    model::Calibrator calibrator;
  };

  // Rebuilds the table when the snapshot's spec generation or catalog is
  // not the one it was built from, and returns whether the spec validates.
  // Every call points the table at the snapshot's spec.
  absl::Status Refresh(const Snapshot& s, const DeciderConfig& config);
  // Whether the last Refresh rebuilt the table (its tiers are new).
  bool rebuilt() const { return rebuilt_; }

  size_t size() const { return tiers_.size(); }
  const Tier& tier(int t) const { return tiers_[static_cast<size_t>(t)]; }
  const Variant& variant(int v) const {
    return variants_[static_cast<size_t>(v)];
  }
  const std::vector<Variant>& variants() const { return variants_; }

  // Concurrent sequences a replica of tier `t` serves within the TPOT SLO,
  // corrected by what the engines showed of its speed.
  int Capacity(int t) const;
  // Replicas of tier `t` for `demand` at the target utilisation (at least
  // one; 0 when the tier cannot serve at all).
  int ReplicasFor(int t, double demand, double target_utilization) const;
  // The cold-start lead of tier `t`: its slowest variant's learned p90 (or
  // the model's estimate), plus a node's start while its pool is full.
  absl::Duration Lead(const Snapshot& s, int t) const;
  // A request's service time on tier `t` (the first, before one is chosen)
  // at `batch` concurrent sequences.
  double ServiceSecondsAt(int t, int batch) const;
  // The price of variant `v` per replica hour (0 for -1: none).
  double Price(int v) const;
  // The variant an idle replica of tier `t` is kept on: on-demand for a
  // Realtime endpoint (or when the tier has no spot), else spot.
  int KeepVariant(int t) const;
  // On-demand when the tier has it, else spot.
  int PrimaryVariant(int t) const;
  // The billing period of tier `t`: its primary variant's.
  absl::Duration Billing(int t) const {
    return variant(PrimaryVariant(t)).billing;
  }
  // Whether tier `t`'s spot class is unhealthy at `now`: preempted or
  // failed to place lately, or a spot replica not ready in time.
  bool SpotUnhealthy(const Snapshot& s, int t, absl::Time now,
                     const DeciderConfig& config) const;

  // Learns tier `t`'s speed from one demand sample taken with `ready`
  // replicas ready: the tokens/s correction and the latency calibration.
  void Learn(int t, const DemandSample& d, int ready,
             const DeciderConfig& config);

  size_t HeapBytes() const;

 private:
  absl::Status Rebuild(const Snapshot& s, const DeciderConfig& config);
  // The tier variant `i` of the spec joins (a new one when none fits).
  using Learned = std::vector<std::pair<std::string, model::Calibrator>>;
  int TierFor(const Snapshot& s, size_t i, const VariantModel& m,
              const DeciderConfig& config, Learned& learned);

  int64_t generation_ = -1;
  const EndpointSpec* spec_ = nullptr;
  const model::Catalog* catalog_ = nullptr;
  absl::Status status_;
  bool rebuilt_ = false;
  std::vector<Variant> variants_;
  std::vector<Tier> tiers_;
  std::string calibrated_model_;  // whose calibrators tiers_ hold
};

}  // namespace pilotlight::policy
