#include "controller/sim/hindsight_policies.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "controller/base/ceil_div.h"
#include "controller/policy/time_window.h"

namespace pilotlight::sim {
namespace {

std::vector<int> OnFirst(size_t n, int replicas) {
  std::vector<int> v(std::max<size_t>(n, 1), 0);
  v.front() = replicas;
  return v;
}

// The replicas the trace needs over time if no request ever waits: a
// sweep over the arrivals with the simulator's own service model. A request
// arriving while `conc` requests (itself included) are in flight needs
// n = ceil(conc / slots) replicas; spread over them by least-loaded
// dispatch it is admitted at batch floor((conc - 1) / n) + 1 -- the most
// the simulator's least-loaded replica can hold when at least n are ready
// -- and decodes at that batch's TPOT (a trace's own service time where it
// has one). So every service time here bounds the simulated one from
// above, the concurrency too, and n(t) replicas ready at t serve every
// request on arrival. Layer k (0-based) is busy while n(t) > k; a request
// that takes no time still needs a replica at its arrival (a zero-length
// interval).
struct Layers {
  std::vector<std::vector<std::pair<double, double>>> busy;  // per layer k
  int peak = 0;
  double longest_service_s = 0;
};

Layers IdealLayers(const EndpointTrace& trace, const ServiceModel& m,
                   bool service_times) {
  Layers l;
  std::priority_queue<double, std::vector<double>, std::greater<>> ends;
  int need = 0;
  const auto set_need = [&l, &need](int n, double t) {
    while (need < n) {
      ++need;
      if (std::ssize(l.busy) < need) {
        l.busy.resize(static_cast<size_t>(need));
      }
      l.busy[static_cast<size_t>(need - 1)].push_back({t, t});
    }
    while (need > n) {
      l.busy[static_cast<size_t>(need - 1)].back().second = t;
      --need;
    }
    l.peak = std::max(l.peak, need);
  };
  const auto release_until = [&](double t) {
    while (!ends.empty() && ends.top() <= t) {
      const double end = ends.top();
      ends.pop();
      set_need(CeilDiv(static_cast<double>(ends.size()), m.slots), end);
    }
  };
  for (const Request& r : trace.requests) {
    release_until(r.arrival_s);  // the simulator completes before it admits
    const int conc = static_cast<int>(ends.size()) + 1;
    const int n = CeilDiv(conc, m.slots);
    set_need(n, r.arrival_s);
    double service = 0;
    if (service_times && r.service_s >= 0) {
      service = static_cast<double>(r.service_s);
    } else {
      const size_t batch = static_cast<size_t>(
          std::min(m.slots, (conc - 1) / std::max(1, n) + 1));
      service = m.replica->TtftSeconds(
                    static_cast<int>(std::max<uint32_t>(1, r.input_tokens))) +
                r.output_tokens * m.tpot_s[batch];
    }
    ends.push(r.arrival_s + service);
    l.longest_service_s = std::max(l.longest_service_s, service);
  }
  release_until(std::numeric_limits<double>::infinity());
  return l;
}

class AlwaysOnPolicy final : public ScalingPolicy {
 public:
  AlwaysOnPolicy(size_t variants, int peak)
      : variants_(variants), peak_(peak) {}
  std::string name() const override { return "always-on"; }
  std::vector<int> Tick(const Observation&) override {
    return OnFirst(variants_, peak_);
  }
  absl::Time QuietUntil() const override { return absl::InfiniteFuture(); }

 private:
  size_t variants_;
  int peak_;
};

// The offline oracle: per replica layer (IdealLayers), runs of one replica
// each, requested one cold start (+ a tick, to land on the tick grid)
// before the run's first busy interval and stopped after its last, chosen
// with hindsight at least cost. A run is billed from its request to its
// stop rounded up to the billing granularity G; with G above a tick a run
// is kept to the end of its last paid period, less a tick and the longest
// service time (the stop lands inside the period, and so does the end of
// the requests the replica drains), and the engine stops or drains the
// replica with the least paid time left (RemoveByPaidTime). Runs are split by
// dynamic programming over the gaps long enough to restart across; a gap of at
// least 2G + the lead is always split (keeping costs more than two rounded-up
// periods). No request meets a cold start or a full replica; it is a lower
// bound on cost at 100 % of requests served on arrival, for the
// simulator's service model (tests/sim/oracle_test.cc).
class OraclePolicy final : public ScalingPolicy {
 public:
  OraclePolicy(size_t variants, const Layers& layers, double lead_s,
               double tick_s, double billing_s, absl::Time epoch)
      : variants_(variants), epoch_(epoch) {
    const double early = lead_s + tick_s;
    const double g = billing_s > tick_s ? billing_s : 0;
    for (const auto& busy : layers.busy) {
      Plan(busy, early, tick_s, g, layers.longest_service_s);
    }
    // By time, up steps before down steps at the same time.
    std::sort(steps_.begin(), steps_.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
  }
  std::string name() const override { return "oracle"; }
  std::vector<int> Tick(const Observation& o) override {
    const double t = absl::ToDoubleSeconds(o.now - epoch_);
    // Up steps apply when due; down steps only once passed (a request
    // arriving at a run's last instant finds its replica).
    while (next_ < steps_.size() &&
           (steps_[next_].first < t ||
            (steps_[next_].first == t && steps_[next_].second > 0))) {
      level_ += steps_[next_].second;
      ++next_;
    }
    return OnFirst(variants_, std::max(0, level_));
  }
  // The schedule's next step; nothing changes before it.
  absl::Time QuietUntil() const override {
    return next_ < steps_.size() ? epoch_ + absl::Seconds(steps_[next_].first)
                                 : absl::InfiniteFuture();
  }
  bool RemoveByPaidTime() const override { return true; }

 private:
  // One layer's runs: steps at request and stop.
  void Plan(const std::vector<std::pair<double, double>>& busy, double early,
            double tick, double g, double drain) {
    const size_t n = busy.size();
    if (n == 0) {
      return;
    }
    // A run of busy[i..j] costs its billed seconds.
    const auto billed = [&](size_t i, size_t j) {
      const double lived = busy[j].second - busy[i].first + early;
      return g > 0 ? std::ceil(lived / g - 1e-9) * g : lived;
    };
    // best[j + 1]: least cost of busy[0..j]; from[j + 1]: its last run's i.
    std::vector<double> best(n + 1, 0);
    std::vector<size_t> from(n + 1, 0);
    size_t window = 0;  // no run starts before the last forced split
    for (size_t j = 0; j < n; ++j) {
      if (j > 0) {
        const double gap = busy[j].first - busy[j - 1].second;
        if (gap >= early + 2 * g) {
          window = j;
        }
      }
      best[j + 1] = std::numeric_limits<double>::infinity();
      // Candidates: a run may start at i only after a gap it can restart
      // across (one replica per layer at a time). With G above the tick,
      // at most kLookBack of them (a bound on the work; runs of thousands
      // of busy intervals inside 2G + lead of each other are rare).
      constexpr int kLookBack = 2000;
      int looked = 0;
      for (size_t i = j + 1; i-- > window && looked < kLookBack;) {
        if (i > 0 && busy[i].first - busy[i - 1].second < early) {
          continue;
        }
        ++looked;
        const double c = best[i] + billed(i, j);
        if (c < best[j + 1]) {
          best[j + 1] = c;
          from[j + 1] = i;
        }
        if (g == 0) {
          break;  // additive cost: the nearest restart point is the best
        }
      }
    }
    for (size_t j = n; j > 0;) {
      const size_t i = from[j];
      const double requested = busy[i].first - early;
      double stop = busy[j - 1].second;
      if (g > 0) {
        const double paid = std::ceil((stop - requested) / g - 1e-9) * g;
        stop = std::max(stop, requested + paid - tick - drain);
      }
      steps_.emplace_back(requested, +1);
      steps_.emplace_back(stop, -1);
      j = i;
    }
  }

  size_t variants_;
  absl::Time epoch_;
  std::vector<std::pair<double, int>> steps_;
  size_t next_ = 0;
  int level_ = 0;
};

}  // namespace

ScalingPolicyPtr MakeAlwaysOn(const PolicyContext& ctx) {
  const Layers layers =
      IdealLayers(*ctx.trace, (*ctx.models)[0], ctx.service_times);
  return ScalingPolicyPtr(
      new AlwaysOnPolicy(ctx.models->size(), std::max(1, layers.peak)));
}

ScalingPolicyPtr MakeOracle(const PolicyContext& ctx) {
  const SimConfig& c = *ctx.config;
  const ServiceModel& m = (*ctx.models)[0];
  const Layers layers = IdealLayers(*ctx.trace, m, ctx.service_times);
  // With measured cold starts the oracle plans for the longest one, so no
  // request meets a cold start whichever is drawn.
  double lead = absl::ToDoubleSeconds(m.cold_start);
  if (!c.cold_start_samples.empty()) {
    lead = *std::max_element(c.cold_start_samples.begin(),
                             c.cold_start_samples.end());
  }
  return ScalingPolicyPtr(new OraclePolicy(
      ctx.models->size(), layers, lead, absl::ToDoubleSeconds(c.tick),
      absl::ToDoubleSeconds(c.billing_granularity), c.epoch));
}

}  // namespace pilotlight::sim
