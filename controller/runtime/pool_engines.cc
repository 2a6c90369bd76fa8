#include "controller/runtime/pool_engines.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/base/host_port.h"
#include "controller/http/sleep_mode.h"
#include "httplib.h"

namespace pilotlight::runtime {

PoolPlan PlanPool(const std::vector<int32_t>& decided,
                  const std::vector<int32_t>& replicas, int32_t own_ready,
                  const std::vector<std::string>& awake,
                  const std::vector<std::string>& asleep) {
  PoolPlan p;
  p.own = decided;
  const bool at_zero = std::all_of(replicas.begin(), replicas.end(),
                                   [](int32_t r) { return r == 0; });
  const int32_t total = std::accumulate(decided.begin(), decided.end(), 0);
  const auto engines = static_cast<int32_t>(awake.size() + asleep.size());
  const auto n_awake = static_cast<int32_t>(awake.size());
  if (!at_zero) {
    // Its own replicas serve once one is Ready: the activator sends the
    // engines nothing more.
    if (own_ready > 0) {
      p.sleep = awake;
    } else {
      p.engines_serving = n_awake;
    }
    return p;
  }
  if (total == 0) {
    p.sleep = awake;  // idle past the policy's grace
    return p;
  }
  if (!decided.empty() && decided[0] == total && total <= engines) {
    // The engines are the replicas, none of its own: the activator wakes
    // one for the request that meets it asleep (and makes room for it on
    // the pod's GPU, which only it can: it knows what is in flight).
    p.own.assign(decided.size(), 0);
    for (int32_t i = total; i < n_awake; ++i) {
      p.sleep.push_back(awake[static_cast<size_t>(i)]);
    }
    p.engines_serving = total;
    return p;
  }
  // More than the engines: its own replicas, as decided; the engines awake
  // serve until one is Ready.
  p.engines_serving = n_awake;
  return p;
}

std::optional<bool> HttpEngineClient::IsSleeping(const std::string& address) {
  const absl::StatusOr<std::pair<std::string, int>> hp =
      SplitHostPort(address, "engine");
  if (!hp.ok()) {
    return std::nullopt;
  }
  httplib::Client c(hp->first, hp->second);
  http::SetClientTimeouts(c, probe_timeout_);
  return http::IsSleeping(c);
}

absl::Status HttpEngineClient::Sleep(const std::string& address) {
  absl::StatusOr<std::pair<std::string, int>> hp =
      SplitHostPort(address, "engine");
  if (!hp.ok()) {
    return hp.status();
  }
  httplib::Client c(hp->first, hp->second);
  http::SetClientTimeouts(c, action_timeout_);
  const httplib::Result r = c.Post("/sleep?level=1", "", "text/plain");
  if (!r) {
    return absl::UnavailableError(absl::StrCat(
        "POST ", address, "/sleep?level=1: ", httplib::to_string(r.error())));
  }
  if (r->status != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat("POST ", address, "/sleep?level=1 answered ", r->status,
                     ": ", r->body.substr(0, 300)));
  }
  return absl::OkStatus();
}

std::vector<PoolEngines::State> PoolEngines::Look(
    const std::string& endpoint, const std::vector<std::string>& addresses) {
  const std::lock_guard<std::mutex> lock(mu_);
  if (addresses.empty()) {
    endpoints_.erase(endpoint);
  } else {
    endpoints_[endpoint] = addresses;
  }
  std::vector<State> out;
  out.reserve(addresses.size());
  for (const std::string& a : addresses) {
    auto it = seen_.find(a);
    out.push_back(it == seen_.end() ? State::kUnknown : it->second);
  }
  return out;
}

void PoolEngines::Forget(const std::string& endpoint) {
  const std::lock_guard<std::mutex> lock(mu_);
  endpoints_.erase(endpoint);
}

std::vector<bool> PoolEngines::AnEngineAwakeOn(
    const std::vector<std::string>& ips) const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::vector<bool> busy;
  busy.reserve(ips.size());
  for (const std::string& ip : ips) {
    const std::string prefix = ip + ":";
    bool awake = false;
    for (auto it = seen_.lower_bound(prefix);
         it != seen_.end() && it->first.starts_with(prefix) && !awake; ++it) {
      awake = it->second == State::kAwake;
    }
    busy.push_back(awake);
  }
  return busy;
}

void PoolEngines::Sleep(const std::string& address) {
  const std::lock_guard<std::mutex> lock(mu_);
  queued_.insert(address);
}

void PoolEngines::RunOnce() {
  std::set<std::string> sleeps;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    sleeps.swap(queued_);
  }
  for (const std::string& address : sleeps) {
    const absl::Status st = client_.Sleep(address);
    if (st.ok()) {
      const std::lock_guard<std::mutex> lock(mu_);
      seen_[address] = State::kAsleep;
    }
    if (on_sleep_) {
      on_sleep_(address, st);
    }
  }
  std::set<std::string> engines;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [endpoint, addresses] : endpoints_) {
      engines.insert(addresses.begin(), addresses.end());
    }
  }
  std::map<std::string, State> seen;
  for (const std::string& a : engines) {
    const std::optional<bool> asleep = client_.IsSleeping(a);
    seen[a] = !asleep   ? State::kUnknown
              : *asleep ? State::kAsleep
                        : State::kAwake;
  }
  const std::lock_guard<std::mutex> lock(mu_);
  seen_ = std::move(seen);  // engines no longer looked at are forgotten
}

void PoolEngines::Run(const std::atomic<bool>& stop, absl::Duration every) {
  while (!stop) {
    const absl::Time next = absl::Now() + every;
    RunOnce();
    while (!stop && absl::Now() < next) {
      absl::SleepFor(std::min(absl::Milliseconds(100), next - absl::Now()));
    }
  }
}

}  // namespace pilotlight::runtime
