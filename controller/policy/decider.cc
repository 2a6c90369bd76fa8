#include "controller/policy/decider.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/base/ceil_div.h"

namespace pilotlight::policy {
namespace {

int ReadyTotal(const Snapshot& s) {
  int ready = 0;
  for (const VariantState& v : s.variants) {
    ready += v.ready;
  }
  return ready;
}

}  // namespace

Decider::Decider(DeciderConfig config) : config_(config), demand_(config_) {}

size_t Decider::StateBytes() const {
  return sizeof(*this) + tiers_.HeapBytes() + demand_.HeapBytes() +
         splitter_.HeapBytes() + keep_alive_.HeapBytes() +
         asleep_keep_.HeapBytes() + governor_.HeapBytes();
}

Decision Decider::Decide(const Snapshot& s, absl::Time now) {
  quiet_until_ = absl::InfinitePast();
  if (std::optional<Decision> keep = CheckSpec(s)) {
    return *std::move(keep);
  }
  Ingest(s);
  if (std::optional<Decision> keep = CheckFreshness(s, now)) {
    return *std::move(keep);
  }
  const DemandForecast forecast = ForecastDemand(s, now);
  TierChoice tier =
      chooser_.Choose(tiers_, splitter_, s, forecast, now, config_);
  const LoadPlan load = SizeLoadAndWarmPool(s, forecast);
  const IdlePlan idle = PlanIdle(s, load, now);
  const ScaleTarget target = StabiliseAndBound(s, load, idle, now);
  Decision d;
  const TierPlan plan = SplitOverVariants(s, forecast, tier, target, d);
  const Stages st{forecast, tier, load, idle, target, plan};
  Summarise(st, d);
  Explain(s, st, now, d);
  quiet_until_ = QuietHorizon(s, idle, target, now);
  return d;
}

void Decider::SkipQuiet(absl::Time first, absl::Duration step, int64_t n) {
  if (n <= 0 || !demand_.last_sample_at()) {
    return;
  }
  demand_.SkipQuiet(first, step, n);
  governor_.SkipQuiet(first, step, n);
}

double Decider::ServiceSeconds() const {
  return tiers_.ServiceSecondsAt(Serving(), 1);
}

double Decider::LoadedServiceSeconds() const {
  return tiers_.ServiceSecondsAt(
      Serving(), std::max(1, tiers_.tier(Serving()).model_capacity));
}

// --- Inputs -----------------------------------------------------------------

Decision Decider::KeepReplicas(const Snapshot& s, ScaleReason reason,
                               std::string message) const {
  Decision d;
  d.valid = false;
  d.reason = reason;
  d.message = std::move(message);
  for (size_t i = 0; i < s.variants.size(); ++i) {
    VariantDecision v;
    if (s.spec != nullptr && i < s.spec->variants.size()) {
      v.deployment = s.spec->variants[i].deployment;
    }
    v.previous = s.variants[i].desired;
    // Never lower than what is running or asked for.
    v.replicas = std::max(s.variants[i].desired, s.variants[i].ready);
    v.reason = reason;
    v.message = d.message;
    if (i < tiers_.variants().size()) {
      d.cost_per_hour +=
          v.replicas *
          tiers_.variant(static_cast<int>(i)).price_per_replica_hour;
    }
    d.variants.push_back(std::move(v));
  }
  return d;
}

// Rule 9: a spec that does not validate, or a snapshot that does not match
// it: keep the replicas.
std::optional<Decision> Decider::CheckSpec(const Snapshot& s) {
  if (s.spec == nullptr || s.catalog == nullptr) {
    return KeepReplicas(s, ScaleReason::kInvalidSpec,
                        "snapshot without spec or catalog");
  }
  const absl::Status status = tiers_.Refresh(s, config_);
  if (tiers_.rebuilt()) {
    chooser_.Reset();
    splitter_.Reset(tiers_.size());
  }
  if (!status.ok()) {
    return KeepReplicas(s, ScaleReason::kInvalidSpec,
                        std::string(status.message()));
  }
  if (s.variants.size() != s.spec->variants.size()) {
    return KeepReplicas(
        s, ScaleReason::kInvalidSpec,
        absl::StrCat("snapshot has ", s.variants.size(), " variant states for ",
                     s.spec->variants.size(), " variants"));
  }
  return std::nullopt;
}

// The new demand samples, into what the endpoint's history teaches and
// what the serving tier's engines show of its speed.
void Decider::Ingest(const Snapshot& s) {
  SampleContext ctx;
  ctx.ready = ReadyTotal(s);
  for (const VariantState& v : s.variants) {
    ctx.asleep += v.sleep.asleep;
  }
  for (size_t i = 0; i < s.variants.size() && i < tiers_.variants().size();
       ++i) {
    ctx.ready_slots +=
        s.variants[i].ready *
        tiers_.Capacity(tiers_.variant(static_cast<int>(i)).tier);
  }
  ctx.service_s = ServiceSeconds();
  ctx.lead = tiers_.Lead(s, Serving());  // for the rise horizon
  for (const DemandSample& d : s.demand) {
    if (demand_.Observe(d, ctx) && chooser_.serving() >= 0) {
      tiers_.Learn(chooser_.serving(), d, ctx.ready, config_);
    }
  }
}

// Rule 9: demand data missing or stale: keep the replicas.
std::optional<Decision> Decider::CheckFreshness(const Snapshot& s,
                                                absl::Time now) {
  const std::optional<absl::Time> last = demand_.last_sample_at();
  if (last && now - *last <= config_.stale_after) {
    return std::nullopt;
  }
  return KeepReplicas(
      s, ScaleReason::kNoData,
      last ? absl::StrCat("no demand sample for ", MessageSeconds(now - *last),
                          " (stale after ", MessageSeconds(config_.stale_after),
                          "): holding replicas")
           : std::string("no demand sample yet: holding replicas"));
}

// --- Stages -----------------------------------------------------------------

// Rules 2 and 3: the forecast one cold-start lead ahead, for the serving
// tier (the first at zero).
DemandForecast Decider::ForecastDemand(const Snapshot& s, absl::Time now) {
  const int serving = Serving();
  const ForecastContext ctx{
      .ready = ReadyTotal(s),
      .capacity = tiers_.Capacity(serving) * config_.target_utilization,
      .lead = tiers_.Lead(s, serving),
      .loaded_service_s = LoadedServiceSeconds()};
  return forecaster_.Forecast(demand_, ctx, now, config_);
}

// Rules 1, 3 and 4: replicas for the forecast on the chosen tier, and the
// warm pool -- the endpoint's own rises over one cold start, at the SLO's
// risk.
Decider::LoadPlan Decider::SizeLoadAndWarmPool(const Snapshot& s,
                                               const DemandForecast& f) {
  const int tier = chooser_.serving();
  LoadPlan p;
  p.lead = tiers_.Lead(s, tier);
  p.cap = tiers_.Capacity(tier) * config_.target_utilization;
  p.load = p.cap > 0 ? CeilDiv(f.forecast, p.cap) : 0;
  p.reason = f.reason;
  p.rising = f.recent > f.stable;
  if (p.load > CeilDiv(f.base, p.cap) && !f.note.empty()) {
    p.reason = ScaleReason::kScaleAhead;
  }
  if (demand_.idle() || p.cap <= 0) {
    return p;
  }
  // Rises are measured from the current level, so the spare capacity is
  // counted from it too (the forecast's own rise is already in `load`) --
  // at the replicas' whole capacity: the headroom a target utilisation
  // under 1 leaves is spare too.
  const RiseTracker& rises = demand_.rises();
  const double full = tiers_.Capacity(tier);
  const double spare = p.load * full - f.base;
  const int most = std::max(1, p.load);
  while (p.warm < most && rises.count() >= 8 &&
         rises.FractionAbove(spare + p.warm * full) >
             s.spec->slo.max_cold_start_fraction) {
    ++p.warm;
  }
  if (rises.count() >= 8) {
    p.rise_risk_without_warm = rises.FractionAbove(spare);
    p.rise_risk_with_warm = rises.FractionAbove(spare + p.warm * full);
  }
  return p;
}

// Rule 5: idle, keep the last replica for the keep-alive, pre-warm ahead of
// a predicted request, else scale to zero.
Decider::IdlePlan Decider::PlanIdle(const Snapshot& s, const LoadPlan& load,
                                    absl::Time now) {
  IdlePlan p;
  const int keep_variant = tiers_.KeepVariant(chooser_.serving());
  const IdleEvidence evidence{.gaps = &demand_.idle_gaps(),
                              .gaps_recorded = demand_.gaps_recorded(),
                              .gaps_per_day = demand_.gaps_per_day_at_idle(),
                              .counts = demand_.counts()};
  p.keep =
      keep_alive_.Plan(*s.spec, evidence,
                       {.price_per_replica_hour = tiers_.Price(keep_variant),
                        .lead = load.lead,
                        .grace = config_.scale_to_zero_grace});
  // An engine that can sleep and wakes within the TTFT SLO: a request
  // after an idle gap costs a wake, not a cold start. The awake replica
  // then idles only for the grace (asleep it costs a share of the pool);
  // its engine stays asleep for the keep-alive priced at that share --
  // the same ski rental and cold-start budget, at the lower rent.
  const SleepState sleep =
      keep_variant >= 0 && static_cast<size_t>(keep_variant) < s.variants.size()
          ? s.variants[static_cast<size_t>(keep_variant)].sleep
          : SleepState{};
  if (sleep.wake > absl::ZeroDuration() && sleep.wake < s.spec->slo.ttft &&
      sleep.asleep_price_per_hour > 0) {
    p.sleep_variant = keep_variant;
    p.sleep = asleep_keep_.Plan(
        *s.spec, evidence,
        {.price_per_replica_hour = sleep.asleep_price_per_hour,
         .lead = load.lead,
         .grace = config_.scale_to_zero_grace,
         .cold_start_price_per_hour = tiers_.Price(keep_variant)});
    // The idle-gap histogram sees 4 hours; a sparse endpoint's gaps run
    // longer. While the requests that met no engine, awake or asleep, run
    // over the SLO's cold-start budget, the engine stays asleep however
    // long the gap (unless slo.maxKeepAliveCostPerDayUSD bounds the spend).
    // As for the awake keep-alive, only once an idle gap has been seen (a
    // first burst at zero is cold whatever is kept), but from the first
    // request (the awake keep-alive waits for 20): a sparse endpoint may
    // never count 20 in its counts' half-life, and an engine asleep costs
    // a fraction of a replica. The counts decay alike while the gap lasts,
    // so the verdict holds for it.
    const ColdStartCounts& c = evidence.counts;
    if (c.requests > 0 && evidence.gaps->samples() > 0 &&
        c.cold_start_requests >
            s.spec->slo.max_cold_start_fraction * c.requests &&
        !s.spec->slo.max_keep_alive_cost_per_day_usd) {
      p.sleep.keep_alive = absl::InfiniteDuration();
      p.sleep.cause = "; cold starts over budget: kept asleep";
    }
    p.keep.keep_alive =
        std::min(p.keep.keep_alive, config_.scale_to_zero_grace);
    p.keep.prewarm_from = absl::InfiniteDuration();
    p.asleep = 1;
  }
  if (!demand_.idle()) {
    return p;
  }
  const KeepAlivePlan& ka = p.keep;
  const absl::Time since = demand_.idle_since();
  const absl::Duration idle_for = now - since;
  if (p.sleep_variant >= 0) {
    p.asleep_until = since + p.sleep.keep_alive;
    p.asleep = idle_for < p.sleep.keep_alive ? 1 : 0;
  }
  p.keep_alive_until = since + ka.keep_alive;
  if (ka.prewarm_from < absl::InfiniteDuration()) {
    p.prewarm_at = since + ka.prewarm_from;
  }
  int running = 0;
  for (const VariantState& v : s.variants) {
    running += v.desired;
  }
  // Keep-alive keeps what runs; it never starts a replica (pre-warm does,
  // below, when a request is predicted).
  if (idle_for < ka.keep_alive && running > 0) {
    p.floor = 1;
    p.reason = ScaleReason::kKeepAlive;
    p.note =
        absl::StrFormat("idle %s, keep-alive %s (%s; break-even %s%s)",
                        MessageSeconds(idle_for), MessageSeconds(ka.keep_alive),
                        IdleHistogram::BasisName(ka.windows.basis),
                        MessageSeconds(ka.break_even), ka.cause);
  } else if (p.prewarm_at && now >= *p.prewarm_at &&
             idle_for < ka.windows.warm_until) {
    p.floor = 1;
    p.reason = ScaleReason::kPreWarm;
    p.note = absl::StrFormat(
        "idle %s, next request predicted from %s (lead %s), warm until %s",
        MessageSeconds(idle_for), MessageSeconds(ka.windows.prewarm),
        MessageSeconds(load.lead), MessageSeconds(ka.windows.warm_until));
  } else if (p.asleep > 0) {
    p.note = absl::StrFormat(
        "idle %s, engine asleep (wakes in %.1f s) for %s (break-even %s at "
        "$%.2f/h asleep%s)",
        MessageSeconds(idle_for), absl::ToDoubleSeconds(sleep.wake),
        MessageSeconds(p.sleep.keep_alive), MessageSeconds(p.sleep.break_even),
        sleep.asleep_price_per_hour, p.sleep.cause);
  } else {
    p.note =
        absl::StrFormat("idle %s, past keep-alive %s (break-even %s%s)",
                        MessageSeconds(idle_for), MessageSeconds(ka.keep_alive),
                        MessageSeconds(ka.break_even), ka.cause);
  }
  return p;
}

// Rule 6: no flapping, and the spec's bounds (ScaleDownGovernor).
ScaleTarget Decider::StabiliseAndBound(const Snapshot& s, const LoadPlan& load,
                                       const IdlePlan& idle, absl::Time now) {
  const int tier = chooser_.serving();
  const TierTable::Tier& t = tiers_.tier(tier);
  int tier_desired = 0;
  for (int v : {t.on_demand, t.spot}) {
    if (v >= 0) {
      tier_desired += s.variants[static_cast<size_t>(v)].desired;
    }
  }
  const GovernorInput in{.now = now,
                         .load = load.load,
                         .warm = load.warm,
                         .load_reason = load.reason,
                         .idle = demand_.idle(),
                         .idle_floor = idle.floor,
                         .idle_reason = idle.reason,
                         .ready = ReadyTotal(s),
                         .lead = load.lead,
                         .tier = tier,
                         .tier_desired = tier_desired,
                         .billing = tiers_.Billing(tier),
                         .partial = demand_.partial(),
                         .saturated = demand_.saturated(),
                         .rising = load.rising,
                         .panic = forecaster_.panic()};
  return governor_.Govern(in, *s.spec, config_);
}

// Rule 8 and the make-before-break of rule 7: the target split over the
// tier's on-demand and spot variants; the tier switched from keeps serving
// until the new one is ready for the target.
TierPlan Decider::SplitOverVariants(const Snapshot& s, const DemandForecast& f,
                                    TierChoice& choice,
                                    const ScaleTarget& target, Decision& d) {
  const int tier = chooser_.serving();
  const SplitRequest r{
      .tier = tier,
      .switching_from = chooser_.switching_from(),
      .target = target.target,
      .reason = target.reason,
      .demand = f.stable,
      .spot_unhealthy = choice.spot_unhealthy[static_cast<size_t>(tier)]};
  const TierPlan plan =
      splitter_.Split(tiers_, s, r, config_.target_utilization, demand_.idle());
  d.economics.tiers = std::move(choice.options);
  if (splitter_.Assign(tiers_, s, r, plan, config_.target_utilization, d) &&
      r.switching_from >= 0) {
    chooser_.SwitchDone();
  }
  return plan;
}

// The decision's numbers and economics (pilotlight explain).
void Decider::Summarise(const Stages& st, Decision& d) const {
  const int tier = chooser_.serving();
  const TierTable::Tier& t = tiers_.tier(tier);
  d.valid = true;
  d.reason = st.target.reason;
  d.tier = t.gpu_class;
  d.load_replicas = st.load.load;
  d.warm_pool = std::max(0, st.target.target - st.load.load);
  d.demand_concurrency = st.forecast.stable;
  d.forecast_concurrency = st.forecast.forecast;
  d.capacity_per_replica = tiers_.Capacity(tier);
  d.model_capacity_per_replica = t.model_capacity;
  d.decode_calibration = t.calibrator.decode().scale;
  d.calibration = t.calibrator.Describe();
  d.panic = forecaster_.panic();
  d.cold_start_lead = st.load.lead;
  d.keep_alive = st.idle.keep.keep_alive;
  d.break_even = st.idle.keep.break_even;
  d.keep_alive_until = st.idle.keep_alive_until;
  d.prewarm_at = st.idle.prewarm_at;
  if (st.idle.sleep_variant >= 0) {
    d.asleep_keep = st.idle.sleep.keep_alive;
    d.asleep_until = st.idle.asleep_until;
    if (static_cast<size_t>(st.idle.sleep_variant) < d.variants.size()) {
      d.variants[static_cast<size_t>(st.idle.sleep_variant)].asleep =
          st.idle.asleep;
    }
  }
  const double on_demand_price = tiers_.Price(tiers_.PrimaryVariant(tier));
  d.always_on_cost_per_hour = std::max(1, st.load.load) * on_demand_price;
  Economics& e = d.economics;
  const KeepAlivePlan& keep = st.idle.keep;
  e.idle_cost_per_hour = keep.idle_cost_per_hour;
  e.cold_start_cost_usd = keep.cold_start_cost_usd;
  e.budget_cost_per_day = keep.budget_cost_per_day;
  e.cold_fraction_at_break_even = keep.cold_fraction_at_break_even;
  e.cold_fraction_expected = keep.cold_fraction_expected;
  e.budget_capped = keep.budget_capped;
  e.warm_pool_cost_per_hour = d.warm_pool * on_demand_price;
  // One independent chance per lead: 3600 / lead chances an hour.
  const double leads_per_hour =
      st.load.lead > absl::ZeroDuration()
          ? 3600.0 / absl::ToDoubleSeconds(st.load.lead)
          : 0;
  e.cold_starts_per_hour_without_warm =
      leads_per_hour * st.load.rise_risk_without_warm;
  e.cold_starts_per_hour_with_warm =
      leads_per_hour * st.load.rise_risk_with_warm;
  e.on_demand_only_cost_per_hour =
      (st.plan.on_demand + st.plan.spot) * on_demand_price;
  e.spot_unhealthy = st.tier.spot_unhealthy[static_cast<size_t>(tier)];
}

// The message: one line with the numbers, per decision and per variant.
void Decider::Explain(const Snapshot& s, const Stages& st, absl::Time now,
                      Decision& d) const {
  const TierTable::Tier& tier = tiers_.tier(chooser_.serving());
  const DemandForecast& f = st.forecast;
  const std::string sizing = absl::StrFormat(
      "demand %.1f in flight, forecast %.1f in %s (cold start %s)%s, "
      "capacity %d/replica -> %d + warm %d on %s",
      f.stable, f.forecast, MessageSeconds(st.load.lead),
      s.variants[static_cast<size_t>(std::max(tier.on_demand, tier.spot))]
                  .cold_start.samples >= 3
          ? "p90"
          : "model",
      f.note.empty() ? "" : absl::StrCat(" [", f.note, "]"),
      d.capacity_per_replica, st.load.load, d.warm_pool, tier.gpu_class);
  d.message = absl::StrCat(ScaleReasonName(st.target.reason), ": ",
                           demand_.idle() ? st.idle.note : sizing);
  const ScaleTarget& t = st.target;
  if (t.paid_until) {
    d.message =
        absl::StrCat(d.message, "; billing: kept until its paid ",
                     MessageSeconds(tiers_.Billing(chooser_.serving())),
                     " period ends in ", MessageSeconds(*t.paid_until - now));
  } else if (t.scale_down_delayed) {
    d.message = absl::StrCat(
        d.message, "; scale-down held ", MessageSeconds(t.stabilisation),
        t.stabilisation > config_.scale_down_stabilization &&
                t.stabilisation > st.load.lead
            ? " (learned: replicas above the first are "
              "needed again within it)"
            : "");
  }
  if (t.reason == ScaleReason::kRising) {
    d.message = absl::StrCat(
        d.message,
        absl::StrFormat("; no scale-down while demand climbs: %.1f in flight "
                        "over the last %s, above the %.1f average",
                        f.recent, MessageSeconds(config_.panic_window),
                        f.stable));
  }
  if (!st.tier.note.empty()) {
    d.message = absl::StrCat(d.message, "; tier switch ", st.tier.note);
  }
  for (VariantDecision& v : d.variants) {
    v.message = v.reason == ScaleReason::kSpotFallback
                    ? absl::StrFormat(
                          "spot %s unhealthy or not ready: "
                          "on-demand covers %d",
                          tier.gpu_class, st.plan.on_demand)
                    : d.message;
  }
}

// When a quiet endpoint's next decision could differ (QuietUntil).
absl::Time Decider::QuietHorizon(const Snapshot& s, const IdlePlan& idle,
                                 const ScaleTarget& target,
                                 absl::Time now) const {
  const TimeBuckets& window = demand_.concurrency();
  if (!demand_.idle() || forecaster_.panic() || demand_.counting_burst() ||
      demand_.partial() || demand_.last_concurrency() != 0 ||
      chooser_.switching_from() >= 0 || chooser_.weighing() ||
      target.scale_down_delayed || !demand_.last_sample_at() ||
      window.Max(now, window.window()).value_or(0) != 0) {
    return absl::InfinitePast();
  }
  // With every demand window at zero the forecast stays zero; what is left
  // depends on time alone, through these.
  absl::Time next = absl::InfiniteFuture();
  const auto after = [&](absl::Time t) {
    if (t > now) {
      next = std::min(next, t);
    }
  };
  if (idle.keep_alive_until) {
    after(*idle.keep_alive_until);
  }
  if (idle.prewarm_at) {
    after(*idle.prewarm_at);
  }
  if (idle.asleep_until) {
    after(*idle.asleep_until);
  }
  after(demand_.idle_since() + idle.keep.windows.warm_until);
  for (const SpotHealth& h : s.spot) {
    for (const std::optional<absl::Time>& at :
         {h.last_preemption, h.last_failed_placement}) {
      if (at) {
        after(*at + config_.spot_unhealthy_for);
      }
    }
  }
  // The keep-alive's over-budget rule needs >= 20 decayed requests: step
  // again a little before the count decays past it.
  constexpr double kBudgetRequests = 20;
  const double requests = demand_.counts().requests;
  const absl::Duration h = config_.cold_start_budget_half_life;
  if (requests >= kBudgetRequests && h > absl::ZeroDuration()) {
    const absl::Time crossing = *demand_.last_sample_at() +
                                h * std::log2(requests / kBudgetRequests) -
                                absl::Seconds(10);
    if (crossing <= now) {
      return absl::InfinitePast();
    }
    next = std::min(next, crossing);
  }
  return next;
}

}  // namespace pilotlight::policy
