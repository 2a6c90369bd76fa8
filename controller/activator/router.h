// Router: which pod each request of an endpoint goes to, and the requests
// that wait for one. Per endpoint it keeps the targets (pods that are Ready
// and whose model server answers, each with an admission cap from the
// sizing model) and hands out leases, least in flight first. A request with
// no free target is held -- bounded per endpoint and in total, by count and
// by bytes -- and leaves the hold in arrival order as slots free up or
// targets appear. The first request held for an endpoint with no target at
// all calls `poke` (the demand reporter tells the controller at once).
//
// Everything the demand reporter sends comes from here (Demand()), so what
// the controller sees is exactly what is held and in flight. Thread-safe;
// Acquire blocks its caller (one HTTP worker per request) until a lease,
// the deadline, or Close().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace pilotlight::activator {

struct HoldLimits {
  int max_held_per_endpoint = 1000;
  int64_t max_held_bytes_per_endpoint = int64_t{64} << 20;
  // Below the connection threads (http::HttpServerOptions::max_threads, 4096):
  // a held request keeps its connection's thread, and warm endpoints' traffic
  // needs threads of its own.
  int max_held_total = 3000;
  int64_t max_held_bytes_total = int64_t{256} << 20;
  // A request naming an endpoint the activator has not seen (yet) waits
  // this long for it to appear before its 404: an InferenceAutoscaler
  // reaches the activator's watch a moment after the controller's, so a
  // client told "Ready" may be ahead of it. At most `max_unknown_waiting`
  // such requests wait at once; more are answered at once.
  absl::Duration unknown_endpoint_wait = absl::Seconds(2);
  int max_unknown_waiting = 100;
};

// What one endpoint's requests look like at the activator now (the demand
// report's v1::EndpointDemand, api::EndpointDemand at the controller).
struct EndpointDemand {
  std::string endpoint;  // "ns/name"
  int64_t arrivals_total = 0;
  int32_t in_flight = 0;
  int32_t held = 0;
  int64_t held_bytes = 0;
  double oldest_wait_seconds = 0;
  bool no_replica = false;  // no target to forward to
  // Wakes of its engines in a pool refused, for another reason than GPU
  // room, since the activator started.
  int64_t wakes_refused_total = 0;
};

class Router;

// A slot on one pod; gives it back when destroyed.
class Lease {
 public:
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&&) = delete;
  Lease(const Lease&) = delete;
  ~Lease();
  const std::string& address() const { return address_; }
  absl::Duration held() const { return held_; }  // time spent waiting
  // It waited for a pod that became a target after the request arrived: a
  // cold start (the simulator counts the same way).
  bool cold() const { return cold_; }

 private:
  friend class Router;
  Lease(Router* router, std::string endpoint, std::string address,
        absl::Duration held, bool cold)
      : router_(router),
        endpoint_(std::move(endpoint)),
        address_(std::move(address)),
        held_(held),
        cold_(cold) {}
  Router* router_;
  std::string endpoint_;
  std::string address_;
  absl::Duration held_;
  bool cold_ = false;
};

class Router {
 public:
  using Poke = std::function<void(const std::string& endpoint)>;
  explicit Router(HoldLimits limits, Poke poke = nullptr)
      : limits_(limits), poke_(std::move(poke)) {}

  // The endpoints requests may name; others are answered 404 (after
  // HoldLimits::unknown_endpoint_wait). Endpoints no longer listed keep
  // their leases until given back.
  void SetEndpoints(const std::set<std::string>& endpoints);
  bool Known(const std::string& endpoint) const;
  // The pods ("host:port") requests of `endpoint` may go to, and how many
  // at once each takes (>= 1).
  void SetTargets(const std::string& endpoint,
                  const std::vector<std::string>& addresses, int cap);
  // A target that refused a connection: out until SetTargets lists it again.
  void Remove(const std::string& endpoint, const std::string& address);
  // The (endpoint, address) pairs Remove took out since the last call.
  std::vector<std::pair<std::string, std::string>> TakeRemoved();

  // A lease on the least-loaded target with a free slot, holding until
  // `deadline` when there is none. Errors: NotFound (an endpoint not
  // listed within HoldLimits::unknown_endpoint_wait),
  // ResourceExhausted (the hold is full: which bound), DeadlineExceeded
  // (held until the deadline), Unavailable (closing), Cancelled
  // (`*cancelled` became true while held -- the client went away; Wake
  // the endpoint after setting it). `arrival`: whether it counts in
  // arrivals_total -- not when the request was counted already (a client's
  // retry, the proxy's retry on another pod): demand counts a request once.
  absl::StatusOr<Lease> Acquire(const std::string& endpoint, int64_t bytes,
                                absl::Time deadline,
                                const std::atomic<bool>* cancelled = nullptr,
                                bool arrival = true);
  // Held requests of `endpoint` look at their `cancelled` again.
  void Wake(const std::string& endpoint);

  // Requests in flight on the target `address` (any endpoint's).
  int InFlightAt(const std::string& address) const;
  // Tells the controller about `endpoint` at once, as a request held at
  // zero does (an engine of its woken instead).
  void PokeNow(const std::string& endpoint) const;
  // A wake of `endpoint`'s engine at `address` was refused
  // (Waker::Callbacks): counted in its demand, the controller told at once,
  // and the target picked after the endpoint's others for a while.
  void WakeRefused(const std::string& endpoint, const std::string& address);
  // Whether a request of `endpoint` waiting on a wake at `address` should
  // go on waiting there: it is still a target, and not one a wake was
  // refused on lately while another target, not refused lately, has a free
  // slot.
  bool KeepsWaitingOn(const std::string& endpoint,
                      const std::string& address) const;

  std::vector<EndpointDemand> Demand(absl::Time now) const;
  EndpointDemand DemandOf(const std::string& endpoint, absl::Time now) const;
  int held_total() const;
  int in_flight_total() const;
  // Blocks until `done(held_total, in_flight_total)` is true or `timeout`
  // passes, and says whether it became true: the drain, and tests, wait on
  // the counts changing instead of polling them.
  bool AwaitTotals(const std::function<bool(int held, int in_flight)>& done,
                   absl::Duration timeout) const;
  // Wakes every held request with Unavailable; new ones are refused.
  void Close();

 private:
  friend class Lease;
  struct Target {
    int in_flight = 0;
    absl::Time since;  // a target from
    // A wake of its engine was refused lately: until then the endpoint's
    // other targets go first.
    absl::Time refusing_until = absl::InfinitePast();
    bool refusing(absl::Time now) const { return now < refusing_until; }
  };
  struct Endpoint {
    std::map<std::string, Target> targets;
    int cap = 1;
    int64_t arrivals_total = 0;
    int64_t wakes_refused_total = 0;
    int in_flight = 0;
    int64_t held_bytes = 0;
    std::map<int64_t, absl::Time> waiting;  // ticket -> since, in order
    std::condition_variable changed;
  };
  void Release(const std::string& endpoint, const std::string& address);
  // The least-loaded target with a free slot, or nullptr.
  // Those a wake was refused on lately only when no other has a slot.
  static std::pair<const std::string, Target>* Pick(Endpoint& e,
                                                    absl::Time now);
  static int FreeSlots(const Endpoint& e);
  // Waits (up to the unknown-endpoint wait, and `deadline`) for `endpoint`
  // to be listed: OK once it is, else why not.
  absl::Status AwaitKnownLocked(std::unique_lock<std::mutex>& lock,
                                const std::string& endpoint,
                                absl::Time deadline,
                                const std::atomic<bool>* cancelled);
  // ResourceExhausted naming the bound a hold of `bytes` more would break.
  absl::Status HoldRoomLocked(const Endpoint& e, int64_t bytes) const;
  EndpointDemand LoadLocked(const std::string& key, const Endpoint& e,
                            absl::Time now) const;

  const HoldLimits limits_;
  const Poke poke_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Endpoint>> endpoints_;
  std::set<std::string> known_;
  std::condition_variable known_changed_;
  int unknown_waiting_ = 0;
  std::vector<std::pair<std::string, std::string>> removed_;
  int held_total_ = 0;
  int in_flight_total_ = 0;
  mutable std::condition_variable totals_changed_;
  int64_t held_bytes_total_ = 0;
  int64_t next_ticket_ = 0;
  bool closed_ = false;
};

}  // namespace pilotlight::activator
