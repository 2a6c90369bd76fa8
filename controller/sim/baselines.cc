#include "controller/sim/baselines.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/base/ceil_div.h"
#include "controller/policy/decision_record.h"
#include "controller/policy/idle_histogram.h"
#include "controller/policy/knative_autoscaler.h"
#include "controller/policy/time_window.h"

namespace pilotlight::sim {

double MergedArrivals(const Observation& o, std::optional<absl::Time> last,
                      absl::Duration tick, absl::Duration rate_window) {
  // Live, the rate is summed over the Ready pods: with none (at zero) it
  // is none, whatever the replicas that went away had completed.
  const bool any_ready =
      std::any_of(o.variants.begin(), o.variants.end(),
                  [](const policy::VariantState& v) { return v.ready > 0; });
  if (!any_ready) {
    return o.arrivals;
  }
  return std::max(o.arrivals, o.completions_per_s *
                                  absl::ToDoubleSeconds(policy::ArrivalSpan(
                                      last, o.now, tick, rate_window)));
}

namespace {

int Ready(const Observation& o) { return o.variants[0].ready; }

std::vector<int> OnFirst(size_t n, int replicas) {
  std::vector<int> v(std::max<size_t>(n, 1), 0);
  v.front() = replicas;
  return v;
}

// --- pilotlight: the real policy core
// ------------------------------------------

class PilotlightPolicy final : public ScalingPolicy {
 public:
  // `log`: where each decision goes as a DecisionRecord (null: nowhere).
  PilotlightPolicy(const SimConfig& c, bool service_times,
                   const policy::DeciderConfig& decider, std::string endpoint,
                   std::function<void(const std::string&)> log)
      : config_(c),
        service_times_(service_times),
        endpoint_(std::move(endpoint)),
        log_(std::move(log)),
        decider_(decider) {}
  std::string name() const override { return "pilotlight"; }
  std::vector<int> Tick(const Observation& o) override {
    policy::DemandSample d;
    d.at = o.now;
    d.in_flight = o.in_flight;
    d.queued = o.queued;
    d.arrivals = MergedArrivals(o, last_now_, config_.tick,
                                config_.prometheus_rate_window);
    last_now_ = o.now;
    if (!service_times_ && o.output_tokens_per_s > 0) {
      d.output_tokens_per_s = o.output_tokens_per_s;
    }
    policy::Snapshot s;
    s.spec = &config_.spec;
    s.catalog = config_.catalog;
    s.demand = {&d, 1};
    s.variants = o.variants;
    s.spot = o.spot;
    const policy::Decision dec = decider_.Decide(s, o.now);
    if (log_) {
      log_(policy::DecisionRecord(endpoint_, s, dec, o.now, config_.epoch));
    }
    std::vector<int> out;
    out.reserve(dec.variants.size());
    bool unchanged = dec.variants.size() == o.variants.size();
    for (size_t i = 0; i < dec.variants.size(); ++i) {
      out.push_back(dec.variants[i].replicas);
      unchanged =
          unchanged && dec.variants[i].replicas == o.variants[i].desired;
    }
    // The decider promises only an answer that stands: this one changed
    // nothing.
    quiet_until_ = unchanged ? decider_.QuietUntil() : absl::InfinitePast();
    return out;
  }
  absl::Time QuietUntil() const override { return quiet_until_; }
  void SkipQuiet(absl::Time first, absl::Duration step, int64_t n) override {
    decider_.SkipQuiet(first, step, n);
  }

 private:
  const SimConfig& config_;
  bool service_times_;
  std::string endpoint_;
  std::function<void(const std::string&)> log_;
  policy::Decider decider_;
  absl::Time quiet_until_ = absl::InfinitePast();
  std::optional<absl::Time> last_now_;  // the last observation's
};

// --- knative: Knative's scaling loop (policy::KnativeAutoscaler) ------------
// The KPA decider and its scale-to-zero reconciler, Knative's own, ported
// and held to Knative's unit tests (policy/knative_kpa.h), with the
// PodAutoscaler's Active condition and the ServerlessService's Proxy mode
// around them -- the same code `pilotlight controller --policy knative`
// runs live.
class KnativePolicy final : public ScalingPolicy {
 public:
  KnativePolicy(size_t variants, int slots, double target_utilization,
                int min_scale, int max_scale)
      : variants_(variants),
        scaler_(slots, target_utilization, min_scale, max_scale) {}
  std::string name() const override { return "knative"; }
  std::vector<int> Tick(const Observation& o) override {
    return OnFirst(variants_, scaler_.Tick(o.now, o.in_flight, o.queued,
                                           Ready(o), o.variants[0].desired));
  }
  absl::Time QuietUntil() const override {
    return scaler_.settled() ? absl::InfiniteFuture() : absl::InfinitePast();
  }
  void SkipQuiet(absl::Time first, absl::Duration step, int64_t n) override {
    scaler_.RecordQuiet(first, step, n);
  }

 private:
  size_t variants_;
  policy::KnativeAutoscaler scaler_;
};

// --- keda: KEDA activation (0 <-> 1) + HPA (1 <-> N)
// -------------------------- kedacore/keda: pollingInterval 30 s,
// cooldownPeriod 300 s (only for the step to zero), activationThreshold 0; HPA
// (autoscaling/v2 defaults): sync every 15 s, desired = ceil(metric / target)
// unless metric / (target x status replicas) is within the 10 % tolerance,
// scale-up at most max(4 pods, 100 %)
// per 15 s, scale-down stabilisation window 300 s (the highest recommendation
// of the last 5 min).
class KedaPolicy final : public ScalingPolicy {
 public:
  KedaPolicy(size_t variants, int slots, double target_utilization)
      : variants_(variants), target_(slots * target_utilization) {}
  std::string name() const override { return "keda"; }
  std::vector<int> Tick(const Observation& o) override {
    const double metric = o.in_flight + o.queued;
    int current = o.variants[0].desired;
    if (!last_poll_ || o.now - *last_poll_ >= absl::Seconds(30)) {
      last_poll_ = o.now;
      if (metric > 0) {
        last_active_ = o.now;
        if (current == 0) {
          current = 1;  // KEDA activates the workload
          recommendations_.clear();
        }
      } else if (current > 0 && last_active_ &&
                 o.now - *last_active_ >= absl::Seconds(300)) {
        current = 0;  // cooldown over: KEDA scales to zero
        recommendations_.clear();
      }
    }
    if (current > 0 &&
        (!last_sync_ || o.now - *last_sync_ >= absl::Seconds(15))) {
      last_sync_ = o.now;
      // The HPA's external per-pod metric (KEDA's AverageValue target):
      // the usage ratio against the Deployment's status replicas -- every
      // pod, ready or starting (ReplicaCalculator.
      // GetExternalPerPodMetricReplicas) -- and, outside the tolerance,
      // ceil(metric / target).
      const int status = std::max(1, o.variants[0].desired);
      const double ratio = metric / (target_ * status);
      int rec = current;
      if (std::abs(1.0 - ratio) > 0.1) {
        rec = std::max(1, static_cast<int>(std::ceil(metric / target_)));
      }
      recommendations_.push_back({o.now, rec});
      while (!recommendations_.empty() &&
             o.now - recommendations_.front().first > absl::Seconds(300)) {
        recommendations_.pop_front();
      }
      int desired = rec;
      if (rec < current) {
        for (const auto& [t, r] : recommendations_) {
          desired = std::max(desired, r);
        }
        desired = std::min(desired, current);
      } else {
        desired = std::min(rec, current + std::max(4, current));
      }
      current = desired;
    }
    // Between polls and syncs a tick only returns what runs.
    quiet_until_ = *last_poll_ + absl::Seconds(30);
    if (current > 0 && last_sync_) {
      quiet_until_ = std::min(quiet_until_, *last_sync_ + absl::Seconds(15));
    }
    if (current != o.variants[0].desired) {
      quiet_until_ = absl::InfinitePast();
    }
    return OnFirst(variants_, current);
  }
  absl::Time QuietUntil() const override { return quiet_until_; }

 private:
  size_t variants_;
  double target_;
  std::optional<absl::Time> last_poll_;
  std::optional<absl::Time> last_sync_;
  std::optional<absl::Time> last_active_;
  std::deque<std::pair<absl::Time, int>> recommendations_;
  absl::Time quiet_until_ = absl::InfinitePast();
};

// --- keep-alive: each replica kept a fixed time after it was last needed ----
// "Layered" keep-alive (AWS Lambda-style: a fixed 10 min after the last
// request, per execution environment): replica k stays until `keep` after the
// demand last needed k replicas. With a histogram, the last replica follows the
// hybrid-histogram windows instead (pre-warm and keep-alive, no break-even
// bound) and the ones above it leave once not needed (Shahrad et al. 2020
// window the application's keep-alive; its other instances have none).
class KeepAlivePolicy final : public ScalingPolicy {
 public:
  KeepAlivePolicy(size_t variants, int slots, absl::Duration keep,
                  bool histogram, absl::Duration lead)
      : variants_(variants),
        slots_(slots),
        keep_(keep),
        histogram_(histogram),
        lead_(lead) {}
  std::string name() const override {
    return histogram_ ? "hybrid-histogram" : "keepalive-10m";
  }
  std::vector<int> Tick(const Observation& o) override {
    const double conc = o.in_flight + o.queued;
    const int need = CeilDiv(conc, slots_);
    const bool active = conc > 0 || o.arrivals > 0;
    if (static_cast<int>(last_needed_.size()) < need) {
      last_needed_.resize(static_cast<size_t>(need));
    }
    for (int k = 0; k < need; ++k) {
      last_needed_[static_cast<size_t>(k)] = o.now;
    }
    // Idle gaps for the histogram.
    if (active) {
      if (idle_since_) {
        hist_.Record(o.now - *idle_since_);
        idle_since_.reset();
      }
    } else if (!idle_since_ && !last_needed_.empty()) {
      idle_since_ = o.now;
    }
    int desired = 0;
    for (size_t k = 0; k < last_needed_.size(); ++k) {
      if (o.now - last_needed_[k] < keep_) {
        desired = static_cast<int>(k) + 1;
      }
    }
    if (histogram_) {
      const policy::IdleHistogram::Windows w = hist_.Compute();
      int first = 0;
      if (active) {
        first = 1;
      } else if (idle_since_) {
        const absl::Duration idle = o.now - *idle_since_;
        const bool in_keep =
            w.prewarm == absl::ZeroDuration() && idle < w.warm_until;
        const bool in_prewarm = w.prewarm > absl::ZeroDuration() &&
                                idle >= w.prewarm - lead_ &&
                                idle < w.warm_until;
        first = in_keep || in_prewarm ? 1 : 0;
      }
      // Replicas above the first follow the layers (none kept with a zero
      // keep, as the published policy); the last one follows the histogram.
      desired = std::max(first, desired > 1 ? desired : first);
    }
    const int out = std::max(desired, need);
    quiet_until_ =
        out == o.variants[0].desired ? NextChange(o.now) : absl::InfinitePast();
    return OnFirst(variants_, out);
  }
  absl::Time QuietUntil() const override { return quiet_until_; }

 private:
  size_t variants_;
  int slots_;
  absl::Duration keep_;
  bool histogram_;
  absl::Duration lead_;
  std::vector<absl::Time> last_needed_;
  // While idle (idle_since_ set, nothing needed), the answer changes only
  // when a layer's keep-alive ends or the histogram's windows open or
  // close: the first of those after `now`.
  absl::Time NextChange(absl::Time now) const {
    absl::Time next = absl::InfiniteFuture();
    const auto after = [&](absl::Time t) {
      if (t > now) {
        next = std::min(next, t);
      }
    };
    for (absl::Time t : last_needed_) {
      after(t + keep_);
    }
    if (histogram_) {
      if (!idle_since_) {
        return absl::InfinitePast();
      }
      const policy::IdleHistogram::Windows w = hist_.Compute();
      after(*idle_since_ + w.warm_until);
      if (w.prewarm > absl::ZeroDuration()) {
        after(*idle_since_ + w.prewarm - lead_);
      }
    }
    return next;
  }

  std::optional<absl::Time> idle_since_;
  policy::IdleHistogram hist_;
  absl::Time quiet_until_ = absl::InfinitePast();
};

// --- always-on and the oracle: schedules from the whole trace
// -----------------

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

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {
      "pilotlight",       "knative",   "keda",  "keepalive-10m",
      "hybrid-histogram", "always-on", "oracle"};
  return kNames;
}

std::optional<PolicyKnob> KnobOf(const std::string& policy) {
  if (policy == "pilotlight") {
    return PolicyKnob{"target utilisation",
                      "",
                      1.0,
                      {1.0, 0.85, 0.7, 0.55, 0.4, 0.3, 0.2, 0.15, 0.1}};
  }
  if (policy == "knative") {
    return PolicyKnob{"target utilisation",
                      "",
                      policy::KnativeAutoscaler::kDefaultTargetUtilization,
                      {0.7, 0.55, 0.4, 0.3, 0.2, 0.15, 0.1}};
  }
  if (policy == "keda") {
    return PolicyKnob{
        "target utilisation", "", 0.7, {0.7, 0.55, 0.4, 0.3, 0.2, 0.15, 0.1}};
  }
  if (policy == "keepalive-10m") {
    return PolicyKnob{"keep-alive", "min", 10, {1, 2, 5, 10, 20, 30, 60, 120}};
  }
  return std::nullopt;
}

absl::StatusOr<ScalingPolicyPtr> MakePolicy(const std::string& name,
                                            const PolicyContext& ctx) {
  const SimConfig& c = *ctx.config;
  const ServiceModel& m = (*ctx.models)[0];
  const size_t n = ctx.models->size();
  const std::optional<PolicyKnob> knob = KnobOf(name);
  if (ctx.knob && !knob) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy '", name, "' has no knob to set"));
  }
  const double value = knob ? ctx.knob.value_or(knob->default_value) : 0;
  if (knob && !(value > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", knob->name, " must be > 0, not ", value));
  }
  if (name == "pilotlight") {
    policy::DeciderConfig d;
    d.target_utilization = value;
    // The servers' own terms: live, the operator's calibration learns them
    // from the engine's histograms (docs/sizing.md); here it starts knowing.
    d.tuning = c.tuning;
    d.billing_granularity = c.billing_granularity;
    // Only the run at the default setting is logged, not a sweep's.
    return ScalingPolicyPtr(new PilotlightPolicy(
        c, ctx.service_times, d, ctx.trace ? ctx.trace->name : "",
        ctx.knob ? nullptr : c.decision_log));
  }
  if (name == "knative") {
    // The endpoint's replica bounds as min-scale and max-scale.
    return ScalingPolicyPtr(new KnativePolicy(
        n, m.slots, value, c.spec.min_replicas, c.spec.max_replicas));
  }
  if (name == "keda") {
    return ScalingPolicyPtr(new KedaPolicy(n, m.slots, value));
  }
  if (name == "keepalive-10m") {
    return ScalingPolicyPtr(new KeepAlivePolicy(
        n, m.slots, absl::Minutes(value), false, m.cold_start));
  }
  if (name == "hybrid-histogram") {
    // The published policy windows the application's keep-alive only:
    // instances above the first leave when no longer needed (no layer
    // keep-alive of their own).
    return ScalingPolicyPtr(new KeepAlivePolicy(
        n, m.slots, absl::ZeroDuration(), true, m.cold_start));
  }
  if (name == "always-on" || name == "oracle") {
    const Layers layers = IdealLayers(*ctx.trace, m, ctx.service_times);
    if (name == "always-on") {
      return ScalingPolicyPtr(new AlwaysOnPolicy(n, std::max(1, layers.peak)));
    }
    // With measured cold starts the oracle plans for the longest one, so no
    // request meets a cold start whichever is drawn.
    double lead = absl::ToDoubleSeconds(m.cold_start);
    if (!c.cold_start_samples.empty()) {
      lead = *std::max_element(c.cold_start_samples.begin(),
                               c.cold_start_samples.end());
    }
    return ScalingPolicyPtr(new OraclePolicy(
        n, layers, lead, absl::ToDoubleSeconds(c.tick),
        absl::ToDoubleSeconds(c.billing_granularity), c.epoch));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", name,
                   "' (known: ", absl::StrJoin(PolicyNames(), ", "), ")"));
}

}  // namespace pilotlight::sim
