// World: a tiny, deterministic stand-in for a cluster, for timeline tests of
// the decider. Each Step(now, demand) calls Decide, then applies the decision
// the way a Deployment would: new replicas become ready one cold start after
// they are asked for, removed replicas go first from the not-yet-ready ones.
// It counts replica-seconds (cost) and requests that met no ready replica.
// Not the simulator (controller/sim): no queueing, no service times.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/policy/decider.h"
#include "controller/policy/snapshot.h"

namespace pilotlight::policy::testing {

inline absl::Time T0() { return absl::FromUnixSeconds(1'700'000'000); }

class World {
 public:
  World(EndpointSpec spec, model::Catalog catalog, DeciderConfig config = {})
      : spec_(std::move(spec)),
        catalog_(std::move(catalog)),
        decider_(config),
        states_(spec_.variants.size()),
        starting_(spec_.variants.size()) {}

  // How long a replica of variant `v` takes to become ready.
  void SetColdStart(size_t v, absl::Duration d) { cold_start_[v] = d; }
  // Learned cold-start stats reported to the decider.
  void ReportColdStart(size_t v, absl::Duration p90, int samples) {
    states_[v].cold_start = {samples, p90, p90};
  }
  void SetSpot(std::vector<SpotHealth> spot) { spot_ = std::move(spot); }
  // The shared pool where variant `v`'s engines can sleep, as reported.
  void SetSleep(size_t v, SleepState s) { states_[v].sleep = s; }

  // Starts the world with `n` ready replicas of variant `v` (e.g. a
  // controller restart while the endpoint runs).
  void SetRunning(size_t v, int n) {
    states_[v].desired = n;
    states_[v].ready = n;
  }
  // Kills `n` ready replicas of variant `v` (a spot preemption).
  void Preempt(size_t v, int n) {
    states_[v].ready = std::max(0, states_[v].ready - n);
    states_[v].desired = std::max(0, states_[v].desired);
  }
  // Spot capacity: when false, new replicas of `v` never become ready.
  void SetPlaceable(size_t v, bool ok) { placeable_[v] = ok; }

  // One decision at `now`, with `demand` observed since the last one.
  const Decision& Step(absl::Time now, std::vector<DemandSample> demand) {
    Advance(now);
    for (const DemandSample& d : demand) {
      requests_ += d.arrivals.value_or(0);
      if (TotalReady() == 0) {
        cold_requests_ += d.arrivals.value_or(0);
      }
    }
    Snapshot s;
    s.spec = &spec_;
    s.catalog = &catalog_;
    s.demand = demand;
    s.variants = states_;
    for (size_t v = 0; v < states_.size(); ++v) {
      s.variants[v].starting.clear();
      for (absl::Time t : starting_[v]) {
        s.variants[v].starting.push_back(t);
      }
    }
    s.spot = spot_;
    last_ = decider_.Decide(s, now);
    if (std::getenv("WORLD_TRACE") != nullptr) {
      Trace(now);
    }
    Apply(now);
    return last_;
  }

  // Convenience: a sample with concurrency and arrivals.
  static DemandSample Sample(absl::Time at, double in_flight,
                             double arrivals = 0) {
    DemandSample d;
    d.at = at;
    d.in_flight = in_flight;
    d.queued = 0.0;
    d.arrivals = arrivals;
    return d;
  }

  int TotalReady() const {
    int n = 0;
    for (const VariantState& s : states_) {
      n += s.ready;
    }
    return n;
  }
  int TotalDesired() const {
    int n = 0;
    for (const VariantState& s : states_) {
      n += s.desired;
    }
    return n;
  }
  const VariantState& state(size_t v) const { return states_[v]; }
  const Decision& last() const { return last_; }
  Decider& decider() { return decider_; }
  EndpointSpec& spec() { return spec_; }
  double replica_seconds() const { return replica_seconds_; }
  double cost_usd() const { return cost_usd_; }
  double requests() const { return requests_; }
  double cold_requests() const { return cold_requests_; }
  int scale_changes() const { return scale_changes_; }

 private:
  // Brings replicas up to `now`: ready ones accrue cost, starting ones
  // become ready after their cold start.
  void Advance(absl::Time now) {
    if (clock_) {
      const double dt = absl::ToDoubleSeconds(now - *clock_);
      for (size_t v = 0; v < states_.size(); ++v) {
        const double n =
            states_[v].ready + static_cast<double>(starting_[v].size());
        replica_seconds_ += n * dt;
        cost_usd_ += n * dt * Price(v) / 3600.0;
      }
    }
    clock_ = now;
    for (size_t v = 0; v < states_.size(); ++v) {
      const absl::Duration cs = ColdStart(v);
      const auto it = placeable_.find(v);
      const bool placeable = it == placeable_.end() || it->second;
      while (placeable && !starting_[v].empty() &&
             now - starting_[v].front() >= cs) {
        starting_[v].pop_front();
        ++states_[v].ready;
      }
    }
  }

  void Apply(absl::Time now) {
    for (size_t v = 0; v < states_.size() && v < last_.variants.size(); ++v) {
      const int want = last_.variants[v].replicas;
      VariantState& s = states_[v];
      if (want != s.desired) {
        ++scale_changes_;
      }
      s.desired = want;
      int have = s.ready + static_cast<int>(starting_[v].size());
      while (have < want) {
        starting_[v].push_back(now);
        ++have;
      }
      while (have > want && !starting_[v].empty()) {
        starting_[v].pop_back();
        --have;
      }
      while (have > want && s.ready > 0) {
        --s.ready;
        --have;
      }
    }
  }

  // WORLD_TRACE=1: print each decision that changes a variant.
  void Trace(absl::Time now) const {
    bool changed = false;
    for (size_t v = 0; v < last_.variants.size(); ++v) {
      changed = changed || last_.variants[v].replicas != states_[v].desired;
    }
    if (!changed) {
      return;
    }
    std::fprintf(stderr, "%8.0fs", absl::ToDoubleSeconds(now - T0()));
    for (size_t v = 0; v < last_.variants.size(); ++v) {
      std::fprintf(stderr, " %s %d->%d (ready %d)",
                   last_.variants[v].deployment.c_str(), states_[v].desired,
                   last_.variants[v].replicas, states_[v].ready);
    }
    std::fprintf(stderr, ": %s\n", last_.message.c_str());
  }

  absl::Duration ColdStart(size_t v) const {
    auto it = cold_start_.find(v);
    return it == cold_start_.end() ? absl::Seconds(60) : it->second;
  }
  double Price(size_t v) const {
    const model::GpuClass* g = catalog_.Find(spec_.variants[v].gpu_class);
    const double per_gpu = spec_.variants[v].capacity == CapacityType::kSpot
                               ? g->price_spot_per_gpu_hour
                               : g->price_on_demand_per_gpu_hour;
    return per_gpu * spec_.variants[v].gpus_per_replica;
  }

  EndpointSpec spec_;
  model::Catalog catalog_;
  Decider decider_;
  std::vector<VariantState> states_;
  std::vector<std::deque<absl::Time>> starting_;
  std::map<size_t, absl::Duration> cold_start_;
  std::map<size_t, bool> placeable_;
  std::vector<SpotHealth> spot_;
  std::optional<absl::Time> clock_;
  Decision last_;
  double replica_seconds_ = 0;
  double cost_usd_ = 0;
  double requests_ = 0;
  double cold_requests_ = 0;
  int scale_changes_ = 0;
};

// A one-variant (or more) spec for Llama-3.1-8B at the default SLO.
inline EndpointSpec Llama8b(std::vector<VariantSpec> variants) {
  EndpointSpec s;
  s.name = "ml/chat";
  s.generation = 1;
  s.model = *model::FindPreset("llama-3.1-8b");
  s.min_replicas = 0;
  s.max_replicas = 16;
  s.variants = std::move(variants);
  return s;
}

inline VariantSpec Variant(std::string deployment, std::string gpu_class,
                           CapacityType capacity = CapacityType::kOnDemand) {
  VariantSpec v;
  v.deployment = std::move(deployment);
  v.gpu_class = std::move(gpu_class);
  v.capacity = capacity;
  return v;
}

}  // namespace pilotlight::policy::testing
