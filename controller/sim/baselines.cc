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
#include "controller/policy/demand_history.h"
#include "controller/policy/idle_histogram.h"
#include "controller/policy/knative_autoscaler.h"
#include "controller/policy/time_window.h"
#include "controller/sim/hindsight_policies.h"
#include "controller/sim/retuned_policy.h"

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
    asleep_.assign(dec.variants.size(), 0);
    bool unchanged = dec.variants.size() == o.variants.size();
    for (size_t i = 0; i < dec.variants.size(); ++i) {
      out.push_back(dec.variants[i].replicas);
      asleep_[i] = dec.variants[i].asleep;
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
  ScalingPolicyPtr Clone() const override {
    return std::make_unique<PilotlightPolicy>(*this);
  }
  std::vector<int> Asleep() const override { return asleep_; }
  bool KeepsEnginesAsleep() const override { return true; }
  // The rises it sizes the warm pool from span this much (the idle gaps
  // its keep-alive learns span days; a sparse endpoint's replay, a day
  // long, holds them).
  absl::Duration Memory() const override {
    return policy::RiseTracker::kHorizon;
  }

 private:
  const SimConfig& config_;
  bool service_times_;
  std::string endpoint_;
  std::function<void(const std::string&)> log_;
  policy::Decider decider_;
  absl::Time quiet_until_ = absl::InfinitePast();
  std::optional<absl::Time> last_now_;  // the last observation's
  std::vector<int> asleep_;             // the last decision's, per variant
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
  ScalingPolicyPtr Clone() const override {
    return std::make_unique<KnativePolicy>(*this);
  }
  // The stable window (the panic window lies within it).
  absl::Duration Memory() const override { return absl::Seconds(60); }

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
  ScalingPolicyPtr Clone() const override {
    return std::make_unique<KedaPolicy>(*this);
  }
  // The HPA's scale-down window, and the cooldown to zero.
  absl::Duration Memory() const override { return absl::Seconds(300); }

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
  ScalingPolicyPtr Clone() const override {
    return std::make_unique<KeepAlivePolicy>(*this);
  }
  // Each replica's keep-alive; with the histogram, every idle gap seen.
  absl::Duration Memory() const override {
    return histogram_ ? absl::InfiniteDuration() : keep_;
  }

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
    return PolicyKnob{
        "keep-alive", "min", 10, {1, 2, 5, 10, 20, 30, 60, 120, 240, 480}};
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
  if (name == "always-on") {
    return MakeAlwaysOn(ctx);
  }
  if (name == "oracle") {
    return MakeOracle(ctx);
  }
  if (name == "pilotlight-retuned") {
    RetuneOptions o;
    o.candidates = DefaultRetuneCandidates();
    return MakeRetunedPolicy(ctx, std::move(o));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", name,
                   "' (known: ", absl::StrJoin(PolicyNames(), ", "),
                   "; experimental: pilotlight-retuned)"));
}

}  // namespace pilotlight::sim
