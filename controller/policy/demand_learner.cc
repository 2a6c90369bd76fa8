#include "controller/policy/demand_learner.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace pilotlight::policy {

double Decay(double value, absl::Duration dt, absl::Duration half_life) {
  if (dt <= absl::ZeroDuration() || half_life <= absl::ZeroDuration()) {
    return value;
  }
  return value * std::exp2(-absl::FDivDuration(dt, half_life));
}

DemandLearner::DemandLearner(const DeciderConfig& config)
    : idle_concurrency_(config.idle_concurrency),
      half_life_(config.cold_start_budget_half_life),
      concurrency_(std::max(config.stable_window, config.trend_window),
                   absl::Seconds(1)) {}

bool DemandLearner::Observe(const DemandSample& d, const SampleContext& ctx) {
  if (last_sample_at_ && d.at <= *last_sample_at_) {
    return false;  // already seen, or out of order
  }
  partial_ = d.partial;
  const absl::Duration dt =
      last_sample_at_ ? d.at - *last_sample_at_ : absl::ZeroDuration();
  // Saturated: in flight + queued over the ready replicas' slots, some
  // queued. The activator holds a request only when every slot is taken,
  // and the engines' running count, scraped, may lag the requests sent to
  // them, which count as queued; the in-flight figure is then stuck at the
  // capacity however much more comes.
  saturated_ = ctx.ready_slots > 0 && d.queued.value_or(0) > 0 &&
               d.in_flight.value_or(0) + d.queued.value_or(0) > ctx.ready_slots;
  const std::optional<double> c = Concurrency(d, dt, ctx);
  TrackAtZero(d, dt, ctx.ready);
  if (!c) {
    return false;
  }
  const double conc = std::max(0.0, *c);
  if (d.partial && conc <= idle_concurrency_ && d.arrivals.value_or(0) <= 0) {
    // Nothing seen, but not everything is visible: no information (it must
    // not start an idle period). Staleness then holds replicas.
    return false;
  }
  if (first_sample_at_ == absl::InfinitePast()) {
    first_sample_at_ = d.at;
  }
  if (!last_sample_at_) {
    // The first sample: what came before it is unknown, so an idle endpoint
    // has been idle since now -- not since the epoch (a restarted
    // controller must not scale everything to zero at once).
    idle_since_ = d.at;
  }
  last_sample_at_ = d.at;
  const bool active = conc > idle_concurrency_ || d.arrivals.value_or(0) > 0;
  concurrency_.Record(d.at, conc);
  season_.Record(d.at, conc);
  const double requests =
      d.arrivals ? *d.arrivals
                 : (active && ctx.service_s > 0
                        ? conc * absl::ToDoubleSeconds(dt) / ctx.service_s
                        : 0.0);
  counts_.gaps = Decay(counts_.gaps, dt, half_life_);
  // At zero every request that arrives waits in the activator's hold,
  // unless the hold refused it (full) or it gave up: then the held queue is
  // not the demand, and the climb once replicas are ready is the backlog's
  // recovery, not a rise of the endpoint's own. A tenth of slack: the
  // arrival figure is the larger of two counts.
  const double held = d.queued.value_or(0);
  if (ctx.ready == 0 && held > 0 && at_zero_since_ != absl::InfiniteFuture() &&
      at_zero_arrivals_ > 1.1 * held + 1) {
    censored_at_ = d.at;
  }
  TrackIdle(d, active, conc, ctx.lead);
  CountRequests(d, dt, requests, ctx.ready + ctx.asleep, ctx.lead);
  last_concurrency_ = conc;
  return true;
}

std::optional<double> DemandLearner::Concurrency(
    const DemandSample& d, absl::Duration dt, const SampleContext& ctx) const {
  // A queued request needs `service_s` of a slot; a replica asked for now
  // serves only after the lead L, so a backlog that drains before then
  // does not need it: the backlog counts as Q x min(1, S / L) concurrent.
  if (d.in_flight || d.queued) {
    const double backlog_weight =
        ctx.lead > absl::ZeroDuration()
            ? std::min(1.0, ctx.service_s / absl::ToDoubleSeconds(ctx.lead))
            : 1.0;
    return d.in_flight.value_or(0) + d.queued.value_or(0) * backlog_weight;
  }
  // Arrivals alone give the load by Little's law (rate x service time).
  if (d.arrivals && dt > absl::ZeroDuration()) {
    return *d.arrivals / absl::ToDoubleSeconds(dt) * ctx.service_s;
  }
  return std::nullopt;
}

// Arrivals while no replica is ready, from the first one: the offered load
// at zero.
void DemandLearner::TrackAtZero(const DemandSample& d, absl::Duration dt,
                                int ready) {
  if (ready > 0) {
    at_zero_since_ = absl::InfiniteFuture();
  } else if (d.arrivals && dt > absl::ZeroDuration() &&
             (at_zero_since_ != absl::InfiniteFuture() || *d.arrivals > 0)) {
    if (at_zero_since_ == absl::InfiniteFuture()) {
      at_zero_since_ = d.at - dt;
      at_zero_arrivals_ = 0;
    }
    at_zero_arrivals_ += std::max(0.0, *d.arrivals);
  }
}

// Busy and idle periods: a busy period's samples feed the rises, its start
// ends an idle gap (recorded) and starts counting the requests of its first
// lead; an idle period's start fixes the gap rate its keep-alive is priced
// at.
void DemandLearner::TrackIdle(const DemandSample& d, bool active, double conc,
                              absl::Duration lead) {
  if (active) {
    rises_.Record(d.at, conc, lead, censored_at_);
    if (idle_ && last_active_at_) {
      idle_gaps_.Record(d.at - idle_since_);
      ++gaps_recorded_;
      counts_.gaps += 1;
      burst_start_ = d.at;
      burst_requests_ = 0;
      counting_burst_ = true;
    }
    idle_ = false;
    last_active_at_ = d.at;
  } else if (!idle_) {
    idle_ = true;
    idle_since_ = d.at;
    if (counts_.gaps > 0) {
      gaps_per_day_at_idle_ = GapsPerDay(d.at);
    }
  }
}

// The requests a cold start delays (a busy period's first lead), and the
// budget's decayed counts of requests and of those that met no ready
// replica.
void DemandLearner::CountRequests(const DemandSample& d, absl::Duration dt,
                                  double requests, int ready,
                                  absl::Duration lead) {
  if (counting_burst_) {
    burst_requests_ += requests;
    if (idle_ || d.at - burst_start_ >= lead) {
      counts_.requests_per_cold_start =
          counts_.requests_per_cold_start == 0
              ? burst_requests_
              : 0.7 * counts_.requests_per_cold_start + 0.3 * burst_requests_;
      counting_burst_ = false;
    }
  }
  counts_.requests = Decay(counts_.requests, dt, half_life_) + requests;
  counts_.cold_start_requests =
      Decay(counts_.cold_start_requests, dt, half_life_) +
      (ready == 0 ? requests : 0.0);
}

void DemandLearner::SkipQuiet(absl::Time first, absl::Duration step,
                              int64_t n) {
  if (n <= 0 || !last_sample_at_) {
    return;
  }
  // Decay() over one step, computed as Decay computes it, so repeated
  // multiplication gives the very bits per-sample decays give.
  const double per_step =
      step > absl::ZeroDuration() && half_life_ > absl::ZeroDuration()
          ? std::exp2(-absl::FDivDuration(step, half_life_))
          : 1.0;
  const absl::Time last = first + step * (n - 1);
  for (int64_t i = 0; i < n; ++i) {
    const absl::Time t = first + step * i;
    const absl::Duration dt = t - *last_sample_at_;
    for (double* count :
         {&counts_.gaps, &counts_.requests, &counts_.cold_start_requests}) {
      *count = dt == step ? *count * per_step : Decay(*count, dt, half_life_);
    }
    season_.Record(t, 0);
    // Only what the window still holds after the last skipped sample.
    if (t > last - concurrency_.window()) {
      concurrency_.Record(t, 0);
    }
    last_sample_at_ = t;
  }
}

// A constant rate g sums to g H / ln 2 (1 - 2^(-t/H)) after t.
double DemandLearner::GapsPerDay(absl::Time now) const {
  if (first_sample_at_ == absl::InfinitePast() || counts_.gaps <= 0) {
    return 0;
  }
  const double h = absl::ToDoubleSeconds(half_life_);
  const double t = std::max(1.0, absl::ToDoubleSeconds(now - first_sample_at_));
  const double seen = h / std::numbers::ln2 * (1 - std::exp2(-t / h));
  return counts_.gaps / seen * 86400;
}

size_t DemandLearner::HeapBytes() const {
  return concurrency_.HeapBytes() + rises_.HeapBytes();
}

}  // namespace pilotlight::policy
