#include "controller/runtime/activator_demand.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pilotlight::runtime {

ActivatorDemand::ActivatorDemand(const kube::Clock& clock,
                                 absl::Duration startup_grace,
                                 absl::Duration forget_after)
    : clock_(clock),
      started_(clock.Now()),
      startup_grace_(startup_grace),
      forget_after_(forget_after) {}

std::vector<std::string> ActivatorDemand::Apply(const ActivatorReport& r) {
  const std::lock_guard<std::mutex> lock(mu_);
  Source& s = sources_[r.activator];
  // Totals that an activator running before this controller began counted
  // are its history, not demand since the last read: its first report here
  // (full, every endpoint it has seen) is where its counts start.
  bool history = false;
  if (s.incarnation != r.incarnation) {
    // A restarted activator counts from zero again.
    s = Source{};
    s.incarnation = r.incarnation;
    history = absl::FromUnixMicros(r.incarnation) < started_;
  }
  s.connected = true;
  if (history) {
    for (const auto& [key, now] : r.endpoints) {
      s.taken[key] = now.arrivals_total;
      s.refusals_taken[key] = now.wakes_refused_total;
      s.endpoints[key].wakes_refused_total = now.wakes_refused_total;
    }
  }
  std::vector<std::string> poke;
  for (const auto& [key, now] : r.endpoints) {
    auto before = s.endpoints.find(key);
    const bool was_holding = before != s.endpoints.end() &&
                             before->second.held > 0 &&
                             before->second.no_replica;
    const bool refused =
        now.wakes_refused_total >
        (before != s.endpoints.end() ? before->second.wakes_refused_total : 0);
    if ((now.held > 0 && now.no_replica && (!r.full || !was_holding)) ||
        refused) {
      poke.push_back(key);
      ++pokes_[key];
      poked_at_.emplace(key, clock_.Now());
    }
  }
  if (r.full) {
    // An endpoint left out of a full report has no demand at this
    // activator; keep its total (arrivals are counted from it).
    for (auto& [key, e] : s.endpoints) {
      if (!r.endpoints.contains(key)) {
        e = EndpointDemand{.arrivals_total = e.arrivals_total,
                           .wakes_refused_total = e.wakes_refused_total};
      }
    }
  }
  for (const auto& [key, now] : r.endpoints) {
    s.endpoints[key] = now;
  }
  return poke;
}

void ActivatorDemand::Disconnected(const std::string& activator,
                                   int64_t incarnation, bool clean) {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = sources_.find(activator);
  if (it == sources_.end() || it->second.incarnation != incarnation) {
    return;  // a newer stream of it took over
  }
  if (clean) {
    sources_.erase(it);
    return;
  }
  it->second.connected = false;
  it->second.lost_at = clock_.Now();
}

std::string ActivatorDemand::LostLocked(absl::Time now) {
  std::string lost;
  for (auto it = sources_.begin(); it != sources_.end();) {
    const Source& s = it->second;
    if (!s.connected && now - s.lost_at > forget_after_) {
      it = sources_.erase(it);  // gone for good (its pod deleted)
      continue;
    }
    if (!s.connected) {
      absl::StrAppend(&lost, "activator ", it->first, ": stream lost ",
                      absl::FormatDuration(absl::Trunc(
                          now - s.lost_at, absl::Milliseconds(100))),
                      " ago; ");
    }
    ++it;
  }
  if (now - started_ < startup_grace_) {
    absl::StrAppend(&lost, "waiting ",
                    absl::FormatDuration(startup_grace_ - (now - started_)),
                    " more for activators to report after start; ");
  }
  return lost;
}

ActivatorRead ActivatorDemand::Read(const std::string& endpoint) {
  const std::lock_guard<std::mutex> lock(mu_);
  ActivatorRead out;
  out.lost = LostLocked(clock_.Now());
  for (auto& [name, s] : sources_) {
    out.reporting += s.connected ? 1 : 0;
    if (!s.connected) {
      // Its last report is stale: what it held is gone with its stream
      // (the clients got an error) or comes back when it reconnects.
      continue;
    }
    auto it = s.endpoints.find(endpoint);
    if (it == s.endpoints.end()) {
      continue;
    }
    const EndpointDemand& e = it->second;
    out.held += e.held;
    out.in_flight += e.in_flight;
    out.oldest_wait_seconds =
        std::max(out.oldest_wait_seconds, e.oldest_wait_seconds);
    int64_t& taken = s.taken[endpoint];
    out.arrivals +=
        static_cast<double>(std::max<int64_t>(0, e.arrivals_total - taken));
    taken = e.arrivals_total;
    int64_t& refusals = s.refusals_taken[endpoint];
    out.wakes_refused += static_cast<double>(
        std::max<int64_t>(0, e.wakes_refused_total - refusals));
    refusals = e.wakes_refused_total;
  }
  return out;
}

int64_t ActivatorDemand::Epoch(const std::string& endpoint) const {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = pokes_.find(endpoint);
  return it == pokes_.end() ? 0 : it->second;
}

std::optional<absl::Time> ActivatorDemand::TakePoke(
    const std::string& endpoint) {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = poked_at_.find(endpoint);
  if (it == poked_at_.end()) {
    return std::nullopt;
  }
  const absl::Time at = it->second;
  poked_at_.erase(it);
  return at;
}

int ActivatorDemand::Connected() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(
      std::count_if(sources_.begin(), sources_.end(),
                    [](const auto& s) { return s.second.connected; }));
}

}  // namespace pilotlight::runtime
