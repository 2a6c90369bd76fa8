#include "controller/sim/replica_pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "controller/policy/leaving_replicas.h"

namespace pilotlight::sim {

ReplicaPool::ReplicaPool(const SimConfig& config,
                         const std::vector<ServiceModel>& models,
                         double measure_from_s)
    : config_(config),
      models_(models),
      measure_from_s_(measure_from_s),
      next_zone_(models.size(), 0),
      zone_free_at_(models.size(),
                    std::vector<double>(
                        static_cast<size_t>(std::max(1, config.zones)), -1e18)),
      asleep_since_(models.size()),
      keep_asleep_(models.size(), 0) {}

bool ReplicaPool::IsSpot(int variant) const {
  return config_.spec.variants[static_cast<size_t>(variant)].capacity ==
         policy::CapacityType::kSpot;
}

void ReplicaPool::Start(int variant, double t, double cold_s) {
  Replica r;
  r.variant = variant;
  r.requested_s = t;
  const auto v = static_cast<size_t>(variant);
  if (config_.sleep && !asleep_since_[v].empty()) {
    // The engine asleep longest wakes (any would do: they are alike).
    BillAsleep(asleep_since_[v].front(), t);
    asleep_since_[v].erase(asleep_since_[v].begin());
    r.woken = true;
    ++wakes_;
    pool_changes_.push_back({.t = t, .asleep = -1, .awake = 1});
    cold_s = absl::ToDoubleSeconds(config_.sleep->wake);
  }
  const int zones = static_cast<int>(zone_free_at_[v].size());
  r.zone = next_zone_[v]++ % zones;
  // Spread round-robin, past the zones without spot capacity now (a node
  // autoscaler launches where there is some); with none anywhere, a spot
  // replica waits in its turn's zone until it returns.
  for (int k = 0; IsSpot(variant) && k < zones; ++k) {
    const int z = (r.zone + k) % zones;
    if (zone_free_at_[v][static_cast<size_t>(z)] <= t) {
      r.zone = z;
      break;
    }
  }
  const double placed =
      IsSpot(variant)
          ? std::max(t, zone_free_at_[v][static_cast<size_t>(r.zone)])
          : t;
  replicas_.push_back(r);
  const int id = static_cast<int>(replicas_.size()) - 1;
  live_ids_.push_back(id);
  ++starting_count_;
  starting_.push({placed + cold_s, id});
}

void ReplicaPool::StartReady(int variant, double t) {
  Start(variant, t, 0);
  // Placed at once (no zone is out at the replay's start) and ready at `t`,
  // with any other replica due by then.
  while (NextReady() <= t) {
    PopReady(t);
  }
}

int ReplicaPool::PopReady(double t) {
  const int id = starting_.top().second;
  starting_.pop();
  Replica& r = replica(id);
  if (r.state != Replica::State::kStarting) {
    return -1;
  }
  r.state = Replica::State::kReady;
  --starting_count_;
  r.ready_s = t;
  ++ready_count_;
  leaving_ready_ += r.leaving ? 1 : 0;
  return id;
}

void ReplicaPool::Stop(int id, double t, bool may_sleep) {
  Replica& r = replica(id);
  const auto v = static_cast<size_t>(r.variant);
  if (may_sleep && config_.sleep && r.state != Replica::State::kStarting &&
      !r.leaving && std::ssize(asleep_since_[v]) < keep_asleep_[v]) {
    asleep_since_[v].push_back(t);
    pool_changes_.push_back({.t = t, .asleep = 1});
  }
  if (r.woken) {
    pool_changes_.push_back({.t = t, .awake = -1});
  }
  if (r.state == Replica::State::kReady) {
    --ready_count_;
    leaving_ready_ -= r.leaving ? 1 : 0;
  } else if (r.state == Replica::State::kStarting) {
    --starting_count_;
  }
  r.state = Replica::State::kGone;
  const ServiceModel& m = models_[static_cast<size_t>(r.variant)];
  const double lived = std::max(0.0, t - r.requested_s);
  const double g = absl::ToDoubleSeconds(config_.billing_granularity);
  const double billed = g > 0 ? std::ceil(lived / g - 1e-9) * g : lived;
  // What falls after the warm-up (all of it without one).
  const double from = std::max(r.requested_s, measure_from_s_);
  const double cost =
      std::max(0.0, r.requested_s + billed - from) * m.price_per_hour / 3600.0;
  billed_cost_ += cost;
  woken_cost_ += r.woken ? cost : 0;
  gpu_seconds_ += std::max(0.0, t - from) * m.gpus;
  live_ids_.erase(std::find(live_ids_.begin(), live_ids_.end(), id));
}

int ReplicaPool::Scale(int v, int want, double now, bool by_paid_time) {
  std::vector<int> live;
  for (int id : live_ids_) {
    const Replica& r = replicas_[static_cast<size_t>(id)];
    if (r.variant == v && r.state != Replica::State::kDraining && !r.leaving) {
      live.push_back(id);
    }
  }
  int have = static_cast<int>(live.size());
  if (have <= want) {
    return want - have;
  }
  const double g = absl::ToDoubleSeconds(config_.billing_granularity);
  const auto paid_left = [&](const Replica& r) {
    const double lived = now - r.requested_s;
    return std::ceil(lived / g - 1e-9) * g - lived;
  };
  std::stable_sort(live.begin(), live.end(), [&](int a, int b) {
    const Replica& ra = replicas_[static_cast<size_t>(a)];
    const Replica& rb = replicas_[static_cast<size_t>(b)];
    if (by_paid_time && paid_left(ra) != paid_left(rb)) {
      return paid_left(ra) < paid_left(rb);
    }
    const bool sa = ra.state == Replica::State::kStarting;
    const bool sb = rb.state == Replica::State::kStarting;
    if (sa != sb) {
      return sa;
    }
    if (sa) {
      return ra.requested_s > rb.requested_s;
    }
    if (ra.busy != rb.busy) {
      return ra.busy < rb.busy;
    }
    return ra.requested_s > rb.requested_s;  // a ReplicaSet: newest first
  });
  for (int id : live) {
    if (have <= want) {
      break;
    }
    Replica& r = replica(id);
    if (r.state == Replica::State::kStarting || r.busy == 0) {
      Stop(id, now, /*may_sleep=*/true);
    } else {
      r.state = Replica::State::kDraining;
      --ready_count_;
    }
    --have;
  }
  return 0;
}

std::vector<Preemption> ReplicaPool::SchedulePreemptions(double from,
                                                         double end) const {
  std::vector<Preemption> out;
  if (config_.spot_preemptions_per_hour <= 0) {
    return out;
  }
  std::mt19937_64 rng(config_.seed ^ 0x5107ULL);
  std::exponential_distribution<double> gap(config_.spot_preemptions_per_hour /
                                            3600.0);
  for (size_t v = 0; v < models_.size(); ++v) {
    if (!IsSpot(static_cast<int>(v))) {
      continue;
    }
    std::uniform_int_distribution<int> zone(
        0, static_cast<int>(zone_free_at_[v].size()) - 1);
    double t = from + gap(rng);
    while (t < end) {
      out.push_back({t, static_cast<int>(v), zone(rng)});
      t += gap(rng);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Preemption& a, const Preemption& b) { return a.t < b.t; });
  return out;
}

int ReplicaPool::Preempt(const Preemption& p) {
  const auto v = static_cast<size_t>(p.variant);
  zone_free_at_[v][static_cast<size_t>(p.zone)] =
      p.t + absl::ToDoubleSeconds(config_.spot_zone_outage);
  int taken = 0;
  const std::vector<int> live = live_ids_;
  for (int id : live) {
    Replica& r = replica(id);
    if (r.variant != p.variant || r.zone != p.zone) {
      continue;
    }
    ++taken;
    r.preempted = r.busy > 0;  // its completions become retries
    r.busy = 0;
    Stop(id, p.t);
  }
  return taken;
}

int ReplicaPool::Notice(const Preemption& p) {
  // The zone's capacity is being taken: no new spot replica goes there.
  double& free_at = zone_free_at_[static_cast<size_t>(p.variant)]
                                 [static_cast<size_t>(p.zone)];
  free_at =
      std::max(free_at, p.t + absl::ToDoubleSeconds(config_.spot_zone_outage));
  int noticed = 0;
  for (int id : live_ids_) {
    Replica& r = replica(id);
    if (r.variant != p.variant || r.zone != p.zone || r.leaving ||
        r.state == Replica::State::kDraining) {
      continue;
    }
    r.leaving = true;
    leaving_ready_ += r.state == Replica::State::kReady ? 1 : 0;
    ++noticed;
  }
  return noticed;
}

void ReplicaPool::ReleaseLeaving(const std::vector<int>& want, double now) {
  if (std::none_of(live_ids_.begin(), live_ids_.end(),
                   [&](int id) { return replica(id).leaving; })) {
    return;
  }
  const size_t n = models_.size();
  std::vector<int32_t> decided(n, 0);
  std::vector<int32_t> ready(n, 0);
  std::vector<int32_t> leaving(n, 0);
  int32_t need = 0;
  for (size_t v = 0; v < n && v < want.size(); ++v) {
    decided[v] = want[v];
    need += want[v];
  }
  for (int id : live_ids_) {
    const Replica& r = replica(id);
    const auto v = static_cast<size_t>(r.variant);
    if (r.leaving && r.state != Replica::State::kDraining) {
      ++leaving[v];
    } else if (!r.leaving && r.state == Replica::State::kReady) {
      ++ready[v];
    }
  }
  const std::vector<int32_t> keep =
      policy::ReplicasWithLeaving(decided, ready, leaving, need);
  for (int id : std::vector<int>(live_ids_)) {
    Replica& r = replica(id);
    const auto v = static_cast<size_t>(r.variant);
    if (!r.leaving || r.state == Replica::State::kDraining ||
        keep[v] > decided[v]) {
      continue;
    }
    if (r.state != Replica::State::kReady || r.busy == 0) {
      Stop(id, now);
    } else {
      r.state = Replica::State::kDraining;  // its requests finish
      --ready_count_;
      --leaving_ready_;
    }
  }
}

bool ReplicaPool::AllReady() const {
  return std::all_of(live_ids_.begin(), live_ids_.end(), [&](int id) {
    return replicas_[static_cast<size_t>(id)].state == Replica::State::kReady;
  });
}

double ReplicaPool::Observe(std::vector<policy::VariantState>& variants,
                            absl::Time epoch) const {
  double gpus_held = 0;
  for (int id : live_ids_) {
    const Replica& r = replicas_[static_cast<size_t>(id)];
    gpus_held += models_[static_cast<size_t>(r.variant)].gpus;
    if (r.leaving) {
      continue;  // gone, to the policy
    }
    policy::VariantState& vs = variants[static_cast<size_t>(r.variant)];
    if (r.state == Replica::State::kReady) {
      ++vs.ready;
    } else if (r.state == Replica::State::kStarting) {
      vs.starting.push_back(epoch + absl::Seconds(r.requested_s));
    } else if (r.state == Replica::State::kDraining) {
      ++vs.terminating;
    }
  }
  if (config_.sleep) {
    for (size_t v = 0; v < variants.size() && v < asleep_since_.size(); ++v) {
      variants[v].sleep = {
          .wake = config_.sleep->wake,
          .asleep = static_cast<int32_t>(asleep_since_[v].size()),
          .asleep_price_per_hour = config_.sleep->asleep_price_per_hour};
    }
  }
  return gpus_held;
}

void ReplicaPool::KeepAsleep(int v, int n, double t) {
  std::vector<double>& since = asleep_since_[static_cast<size_t>(v)];
  keep_asleep_[static_cast<size_t>(v)] = std::max(0, n);
  while (std::ssize(since) > std::max(0, n)) {
    BillAsleep(since.back(), t);
    since.pop_back();
    pool_changes_.push_back({.t = t, .asleep = -1});
  }
}

void ReplicaPool::EndSleep(double t) {
  for (size_t v = 0; v < asleep_since_.size(); ++v) {
    KeepAsleep(static_cast<int>(v), 0, t);
  }
}

double ReplicaPool::AsleepCost(double since, double t) const {
  if (!config_.sleep) {
    return 0;
  }
  return std::max(0.0, t - std::max(since, measure_from_s_)) *
         config_.sleep->asleep_price_per_hour / 3600.0;
}

void ReplicaPool::BillAsleep(double since, double t) {
  const double cost = AsleepCost(since, t);
  billed_cost_ += cost;
  asleep_cost_ += cost;
}

double ReplicaPool::RunningCost(double t) const {
  double running = 0;
  for (const std::vector<double>& since : asleep_since_) {
    for (double s : since) {
      running += AsleepCost(s, t);
    }
  }
  for (int id : live_ids_) {
    const Replica& r = replicas_[static_cast<size_t>(id)];
    running += std::max(0.0, t - std::max(r.requested_s, measure_from_s_)) *
               models_[static_cast<size_t>(r.variant)].price_per_hour / 3600;
  }
  return running;
}

}  // namespace pilotlight::sim
