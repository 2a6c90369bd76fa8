#include "controller/activator/router.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace pilotlight::activator {
namespace {

// How long a target a wake was refused on goes after the endpoint's others:
// a broken engine is asked again by each request only once the others are
// full, or once this passes (the engine may have been restarted).
constexpr absl::Duration kRefusing = absl::Seconds(30);

}  // namespace

Lease::Lease(Lease&& other) noexcept
    : router_(std::exchange(other.router_, nullptr)),
      endpoint_(std::move(other.endpoint_)),
      address_(std::move(other.address_)),
      held_(other.held_),
      cold_(other.cold_) {}

Lease::~Lease() {
  if (router_ != nullptr) {
    router_->Release(endpoint_, address_);
  }
}

void Router::SetEndpoints(const std::set<std::string>& endpoints) {
  const std::lock_guard<std::mutex> lock(mu_);
  known_ = endpoints;
  known_changed_.notify_all();
  for (auto& [key, e] : endpoints_) {
    if (!known_.contains(key)) {
      e->targets.clear();
      e->changed.notify_all();
    }
  }
}

bool Router::Known(const std::string& endpoint) const {
  const std::lock_guard<std::mutex> lock(mu_);
  return known_.contains(endpoint);
}

void Router::SetTargets(const std::string& endpoint,
                        const std::vector<std::string>& addresses, int cap) {
  const std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Endpoint>& slot = endpoints_[endpoint];
  if (slot == nullptr) {
    slot = std::make_unique<Endpoint>();
  }
  std::map<std::string, Target> next;
  const absl::Time now = absl::Now();
  for (const std::string& a : addresses) {
    auto it = slot->targets.find(a);
    next[a] = it == slot->targets.end() ? Target{.in_flight = 0, .since = now}
                                        : it->second;
  }
  slot->targets = std::move(next);
  slot->cap = std::max(1, cap);
  slot->changed.notify_all();
}

void Router::Remove(const std::string& endpoint, const std::string& address) {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = endpoints_.find(endpoint);
  if (it != endpoints_.end() && it->second->targets.erase(address) > 0) {
    removed_.emplace_back(endpoint, address);
  }
}

std::vector<std::pair<std::string, std::string>> Router::TakeRemoved() {
  const std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(removed_, {});
}

std::pair<const std::string, Router::Target>* Router::Pick(Endpoint& e,
                                                           absl::Time now) {
  std::pair<const std::string, Target>* best = nullptr;
  for (auto& t : e.targets) {
    if (t.second.in_flight >= e.cap) {
      continue;
    }
    const bool refusing = t.second.refusing(now);
    if (best == nullptr || best->second.refusing(now) > refusing ||
        (best->second.refusing(now) == refusing &&
         t.second.in_flight < best->second.in_flight)) {
      best = &t;
    }
  }
  return best;
}

int Router::FreeSlots(const Endpoint& e) {
  int free = 0;
  for (const auto& [address, t] : e.targets) {
    free += std::max(0, e.cap - t.in_flight);
  }
  return free;
}

absl::Status Router::HoldRoomLocked(const Endpoint& e, int64_t bytes) const {
  const auto full = [](const char* what, int64_t have, int64_t max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "hold queue full: ", have, " ", what, " (max ", max, "); retry later"));
  };
  if (std::ssize(e.waiting) >= limits_.max_held_per_endpoint) {
    return full("requests held for this endpoint", std::ssize(e.waiting),
                limits_.max_held_per_endpoint);
  }
  if (e.held_bytes + bytes > limits_.max_held_bytes_per_endpoint) {
    return full("bytes held for this endpoint", e.held_bytes,
                limits_.max_held_bytes_per_endpoint);
  }
  if (held_total_ >= limits_.max_held_total) {
    return full("requests held in total", held_total_, limits_.max_held_total);
  }
  if (held_bytes_total_ + bytes > limits_.max_held_bytes_total) {
    return full("bytes held in total", held_bytes_total_,
                limits_.max_held_bytes_total);
  }
  return absl::OkStatus();
}

void Router::Wake(const std::string& endpoint) {
  const std::lock_guard<std::mutex> lock(mu_);
  known_changed_.notify_all();
  if (const auto it = endpoints_.find(endpoint); it != endpoints_.end()) {
    it->second->changed.notify_all();
  }
}

absl::StatusOr<Lease> Router::Acquire(const std::string& endpoint,
                                      int64_t bytes, absl::Time deadline,
                                      const std::atomic<bool>* cancelled,
                                      bool arrival) {
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) {
    return absl::UnavailableError("the activator is shutting down");
  }
  if (!known_.contains(endpoint)) {
    if (absl::Status known =
            AwaitKnownLocked(lock, endpoint, deadline, cancelled);
        !known.ok()) {
      return known;
    }
  }
  std::unique_ptr<Endpoint>& slot = endpoints_[endpoint];
  if (slot == nullptr) {
    slot = std::make_unique<Endpoint>();
  }
  Endpoint& e = *slot;
  e.arrivals_total += arrival ? 1 : 0;
  const absl::Time start = absl::Now();
  const auto take = [&](std::pair<const std::string, Target>& t) {
    ++t.second.in_flight;
    ++e.in_flight;
    ++in_flight_total_;
    totals_changed_.notify_all();
    return Lease(this, endpoint, t.first, absl::Now() - start,
                 t.second.since > start);
  };
  if (e.waiting.empty()) {
    if (auto* t = Pick(e, absl::Now())) {
      return take(*t);
    }
  }
  // Hold, within every bound.
  if (absl::Status room = HoldRoomLocked(e, bytes); !room.ok()) {
    return room;
  }
  const int64_t ticket = next_ticket_++;
  e.waiting[ticket] = start;
  e.held_bytes += bytes;
  ++held_total_;
  held_bytes_total_ += bytes;
  totals_changed_.notify_all();
  const auto leave = [&] {
    e.waiting.erase(ticket);
    e.held_bytes -= bytes;
    --held_total_;
    held_bytes_total_ -= bytes;
    e.changed.notify_all();  // the others move up
    totals_changed_.notify_all();
  };
  if (e.targets.empty() && poke_) {
    lock.unlock();
    poke_(endpoint);
    lock.lock();
  }
  while (true) {
    if (closed_) {
      leave();
      return absl::UnavailableError("the activator is shutting down");
    }
    if (cancelled != nullptr && cancelled->load()) {
      leave();
      return absl::CancelledError(
          absl::StrCat("the client went away after ",
                       absl::FormatDuration(absl::Trunc(
                           absl::Now() - start, absl::Milliseconds(1)))));
    }
    // In arrival order: the i-th waiter goes once i slots are free.
    const auto pos = std::distance(e.waiting.begin(), e.waiting.find(ticket));
    if (pos < FreeSlots(e)) {
      if (auto* t = Pick(e, absl::Now())) {
        leave();
        return take(*t);
      }
    }
    if (absl::Now() >= deadline) {
      leave();
      return absl::DeadlineExceededError(
          absl::StrCat("no replica of ", endpoint, " was ready after ",
                       absl::FormatDuration(absl::Trunc(
                           absl::Now() - start, absl::Milliseconds(1)))));
    }
    e.changed.wait_until(lock, absl::ToChronoTime(deadline));
  }
}

absl::Status Router::AwaitKnownLocked(std::unique_lock<std::mutex>& lock,
                                      const std::string& endpoint,
                                      absl::Time deadline,
                                      const std::atomic<bool>* cancelled) {
  const absl::Duration wait = limits_.unknown_endpoint_wait;
  const auto not_found = [&] {
    return absl::NotFoundError(
        absl::StrCat("no InferenceAutoscaler ", endpoint));
  };
  if (wait <= absl::ZeroDuration() ||
      unknown_waiting_ >= limits_.max_unknown_waiting) {
    return not_found();
  }
  ++unknown_waiting_;
  known_changed_.wait_until(
      lock, absl::ToChronoTime(std::min(deadline, absl::Now() + wait)), [&] {
        return closed_ || known_.contains(endpoint) ||
               (cancelled != nullptr && cancelled->load());
      });
  --unknown_waiting_;
  if (closed_) {
    return absl::UnavailableError("the activator is shutting down");
  }
  if (known_.contains(endpoint)) {
    return absl::OkStatus();
  }
  if (cancelled != nullptr && cancelled->load()) {
    return absl::CancelledError("the client went away");
  }
  return not_found();
}

void Router::Release(const std::string& endpoint, const std::string& address) {
  const std::lock_guard<std::mutex> lock(mu_);
  Endpoint& e = *endpoints_.at(endpoint);
  --e.in_flight;
  --in_flight_total_;
  auto it = e.targets.find(address);
  if (it != e.targets.end()) {
    --it->second.in_flight;
  }
  e.changed.notify_all();
  totals_changed_.notify_all();
}

EndpointDemand Router::LoadLocked(const std::string& key, const Endpoint& e,
                                  absl::Time now) const {
  EndpointDemand l;
  l.endpoint = key;
  l.arrivals_total = e.arrivals_total;
  l.wakes_refused_total = e.wakes_refused_total;
  l.in_flight = e.in_flight;
  l.held = static_cast<int32_t>(e.waiting.size());
  l.held_bytes = e.held_bytes;
  if (!e.waiting.empty()) {
    l.oldest_wait_seconds = absl::ToDoubleSeconds(
        now - std::min_element(e.waiting.begin(), e.waiting.end(),
                               [](const auto& a, const auto& b) {
                                 return a.second < b.second;
                               })
                  ->second);
  }
  l.no_replica = e.targets.empty();
  return l;
}

std::vector<EndpointDemand> Router::Demand(absl::Time now) const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::vector<EndpointDemand> out;
  for (const auto& [key, e] : endpoints_) {
    if (e->arrivals_total > 0) {
      out.push_back(LoadLocked(key, *e, now));
    }
  }
  return out;
}

EndpointDemand Router::DemandOf(const std::string& endpoint,
                                absl::Time now) const {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end()) {
    EndpointDemand l;
    l.endpoint = endpoint;
    l.no_replica = true;
    return l;
  }
  return LoadLocked(endpoint, *it->second, now);
}

int Router::InFlightAt(const std::string& address) const {
  const std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [key, e] : endpoints_) {
    auto it = e->targets.find(address);
    if (it != e->targets.end()) {
      n += it->second.in_flight;
    }
  }
  return n;
}

void Router::PokeNow(const std::string& endpoint) const {
  if (poke_) {
    poke_(endpoint);
  }
}

void Router::WakeRefused(const std::string& endpoint,
                         const std::string& address) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    auto it = endpoints_.find(endpoint);
    if (it == endpoints_.end()) {
      return;
    }
    ++it->second->wakes_refused_total;
    if (auto t = it->second->targets.find(address);
        t != it->second->targets.end()) {
      t->second.refusing_until = absl::Now() + kRefusing;
    }
  }
  PokeNow(endpoint);
}

bool Router::KeepsWaitingOn(const std::string& endpoint,
                            const std::string& address) const {
  const std::lock_guard<std::mutex> lock(mu_);
  auto it = endpoints_.find(endpoint);
  if (it == endpoints_.end()) {
    return false;
  }
  const Endpoint& e = *it->second;
  const auto t = e.targets.find(address);
  if (t == e.targets.end()) {
    return false;
  }
  const absl::Time now = absl::Now();
  if (!t->second.refusing(now)) {
    return true;
  }
  // Another target with a free slot would be picked instead.
  return std::none_of(e.targets.begin(), e.targets.end(), [&](const auto& o) {
    return o.first != address && !o.second.refusing(now) &&
           o.second.in_flight < e.cap;
  });
}

int Router::held_total() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return held_total_;
}

int Router::in_flight_total() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return in_flight_total_;
}

bool Router::AwaitTotals(
    const std::function<bool(int held, int in_flight)>& done,
    absl::Duration timeout) const {
  const absl::Time until = absl::Now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  return totals_changed_.wait_until(lock, absl::ToChronoTime(until), [&] {
    return done(held_total_, in_flight_total_);
  });
}

void Router::Close() {
  const std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  known_changed_.notify_all();
  for (auto& [key, e] : endpoints_) {
    e->changed.notify_all();
  }
}

}  // namespace pilotlight::activator
