#include "controller/policy/decider.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/base/ceil_div.h"
#include "controller/policy/variant_model.h"

namespace pilotlight::policy {
namespace {

std::string Secs(absl::Duration d) {
  return absl::StrFormat("%.0f s", absl::ToDoubleSeconds(d));
}

// The scale-down stabilisation window's reach (its maximum span): the
// longest learned hold.
constexpr absl::Duration kLoadTargetWindow = absl::Minutes(30);

// Decays a counter with the given half-life over `dt`.
double Decay(double value, absl::Duration dt, absl::Duration half_life) {
  if (dt <= absl::ZeroDuration() || half_life <= absl::ZeroDuration()) {
    return value;
  }
  return value * std::exp2(-absl::FDivDuration(dt, half_life));
}

}  // namespace

Decider::Decider(DeciderConfig config)
    : config_(config),
      demand_(std::max(config_.stable_window, config_.trend_window),
              absl::Seconds(1)),
      load_targets_(kLoadTargetWindow, absl::Seconds(10)) {}

size_t Decider::StateBytes() const {
  size_t bytes = sizeof(*this);
  // Heap parts: the window buckets and the per-variant and per-tier vectors.
  bytes += demand_.HeapBytes() + load_targets_.HeapBytes() + rises_.HeapBytes();
  bytes += variants_.capacity() * sizeof(Variant);
  bytes += dropped_at_.capacity() * sizeof(absl::Time);
  bytes += level_started_.capacity() * sizeof(absl::Time);
  bytes += tiers_.capacity() * sizeof(Tier);
  bytes += budget_ ? sizeof(BudgetPrice) : 0;
  for (const Tier& t : tiers_) {
    bytes += t.gpu_class.capacity() + t.calibrator.last_rejection().capacity();
  }
  bytes += calibrated_model_.capacity();
  return bytes;
}

// --- Spec-derived data ------------------------------------------------------

absl::Status Decider::Derive(const Snapshot& s) {
  const EndpointSpec& spec = *s.spec;
  generation_ = spec.generation;
  spec_seen_ = s.spec;
  catalog_seen_ = s.catalog;
  // What the servers taught about a class outlives a spec change that keeps
  // the model (a new min replicas, say); a new model starts over.
  std::vector<std::pair<std::string, model::Calibrator>> learned;
  if (spec.model.name == calibrated_model_) {
    for (Tier& t : tiers_) {
      learned.emplace_back(t.gpu_class, std::move(t.calibrator));
    }
  }
  calibrated_model_ = spec.model.name;
  variants_.clear();
  tiers_.clear();
  tier_ = -1;
  switching_from_ = -1;
  candidate_tier_ = -1;
  if (absl::Status st = ValidateEndpointSpec(spec, *s.catalog); !st.ok()) {
    return st;
  }
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    const VariantSpec& vs = spec.variants[i];
    absl::StatusOr<VariantModel> m =
        DeriveVariant(spec, i, *s.catalog, config_.tuning);
    if (!m.ok()) {
      return m.status();
    }
    // A tier is a GPU model at a tensor-parallel degree: the same class
    // name, or -- as with GPUClass objects, one per capacity type -- two
    // classes of the same GPU model, one on-demand and one spot.
    const bool spot_variant = vs.capacity == CapacityType::kSpot;
    const std::string& gpu_model = s.catalog->Find(vs.gpu_class)->gpu_model;
    int tier = -1;
    for (size_t t = 0; t < tiers_.size() && tier < 0; ++t) {
      const Tier& c = tiers_[t];
      if (c.replica->tensor_parallel() != vs.gpus_per_replica) {
        continue;
      }
      const int taken = spot_variant ? c.spot : c.on_demand;
      if (c.gpu_class == vs.gpu_class ||
          (c.gpu_model == gpu_model && taken < 0)) {
        tier = static_cast<int>(t);
      }
    }
    if (tier < 0) {
      Tier t;
      t.calibrator = model::Calibrator(config_.calibration);
      for (auto& [cls, c] : learned) {
        if (cls == vs.gpu_class) {
          t.calibrator = std::move(c);
        }
      }
      t.gpu_class = vs.gpu_class;
      t.gpu_model = gpu_model;
      t.replica.emplace(m->replica);
      t.model_capacity = m->capacity;
      t.ttft_s = m->ttft_s;
      tiers_.push_back(std::move(t));
      tier = static_cast<int>(tiers_.size()) - 1;
    }
    Tier& t = tiers_[static_cast<size_t>(tier)];
    const bool spot = vs.capacity == CapacityType::kSpot;
    int& slot = spot ? t.spot : t.on_demand;
    if (slot >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variants[", i, "]: a second ", CapacityTypeName(vs.capacity),
          " variant on ", vs.gpu_class, " x", vs.gpus_per_replica,
          " (variants[", slot, "]); one per capacity type per tier"));
    }
    slot = static_cast<int>(i);
    Variant v;
    v.tier = tier;
    v.price_per_replica_hour = m->price_per_replica_hour;
    v.lead_estimate = m->cold_start;
    v.node_provisioning = m->node_provisioning;
    v.billing = vs.billing_granularity.value_or(config_.billing_granularity);
    variants_.push_back(v);
  }
  bool any_fits = false;
  for (const Tier& t : tiers_) {
    any_fits = any_fits || t.model_capacity > 0;
  }
  if (!any_fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no variant can serve ", spec.model.name, " within the TPOT SLO of ",
        absl::ToDoubleSeconds(spec.slo.tpot),
        " s (run `pilotlight size` for the reasons)"));
  }
  return absl::OkStatus();
}

int Decider::Capacity(const Tier& t) const {
  if (!t.replica || t.model_capacity <= 0) {
    return 0;
  }
  if (spec_seen_->concurrency_per_replica > 0) {
    return t.model_capacity;
  }
  // How much faster than modelled a replica runs: the calibrated decode
  // factor from the engines' histograms where there is one (steps `scale`
  // times the model's: speed 1 / scale), else the tokens/s correction.
  const model::Factor& decode = t.calibrator.decode();
  const bool calibrated = decode.state == model::CalibrationState::kCalibrated;
  if (std::abs((calibrated ? decode.scale : t.correction) - 1.0) < 0.02) {
    return t.model_capacity;
  }
  // A replica `c` times faster than modelled meets TPOT(b)/c <= SLO, i.e.
  // the model's TPOT(b) <= c x SLO.
  // Floored at 1: a replica slower than the SLO still serves one sequence;
  // a zero here would size a loaded endpoint to nothing.
  const double slo_s = absl::ToDoubleSeconds(spec_seen_->slo.tpot);
  return std::max(
      1, t.replica->MaxConcurrency(
             spec_seen_->workload,
             calibrated ? slo_s / decode.scale : slo_s * t.correction));
}

absl::Duration Decider::Lead(const Snapshot& s, int tier) const {
  absl::Duration lead;
  const Tier& t = tiers_[static_cast<size_t>(tier)];
  for (int v : {t.on_demand, t.spot}) {
    if (v < 0) {
      continue;
    }
    const VariantState& state = s.variants[static_cast<size_t>(v)];
    const Variant& model = variants_[static_cast<size_t>(v)];
    // The learned p90 (pods created -> Ready) once there are samples, else
    // the model; plus a node's start while the pool has no free GPU.
    absl::Duration d = state.cold_start.samples >= 3 ? state.cold_start.p90
                                                     : model.lead_estimate;
    if (!state.node_free) {
      d += model.node_provisioning;
    }
    lead = std::max(lead, d);
  }
  return lead;
}

double Decider::ServiceSecondsAt(const EndpointSpec& spec, int batch) const {
  const Tier& t = tiers_[static_cast<size_t>(std::max(tier_, 0))];
  return t.ttft_s + spec.workload.output_tokens *
                        t.replica->TpotSeconds(batch, spec.workload);
}

double Decider::ServiceSeconds(const EndpointSpec& spec) const {
  return ServiceSecondsAt(spec, 1);
}

double Decider::LoadedServiceSeconds(const EndpointSpec& spec) const {
  const Tier& t = tiers_[static_cast<size_t>(std::max(tier_, 0))];
  return ServiceSecondsAt(spec, std::max(1, t.model_capacity));
}

// --- Demand -----------------------------------------------------------------

void Decider::Ingest(const Snapshot& s) {
  const EndpointSpec& spec = *s.spec;
  int ready = 0;
  for (const VariantState& v : s.variants) {
    ready += v.ready;
  }
  double ready_slots = 0;  // requests the ready replicas take at once
  for (size_t i = 0; i < s.variants.size() && i < variants_.size(); ++i) {
    ready_slots += s.variants[i].ready *
                   Capacity(tiers_[static_cast<size_t>(variants_[i].tier)]);
  }
  const double service_s = ServiceSeconds(spec);
  const absl::Duration lead =
      Lead(s, std::max(tier_, 0));  // for the rise horizon
  for (const DemandSample& d : s.demand) {
    if (last_sample_at_ && d.at <= *last_sample_at_) {
      continue;  // already seen, or out of order
    }
    demand_partial_ = d.partial;
    const absl::Duration dt =
        last_sample_at_ ? d.at - *last_sample_at_ : absl::ZeroDuration();
    // A queued request needs `service_s` of a slot; a replica asked for now
    // serves only after the lead L, so a backlog that drains before then
    // does not need it: the backlog counts as Q x min(1, S / L) concurrent.
    // Saturated: every ready replica at its cap and requests held -- in
    // flight + queued over the ready replicas' slots, some queued (the
    // activator holds a request only when every slot is taken, and the
    // engines' running count, scraped, may lag the requests it sent them,
    // which count as queued). The in-flight figure is then stuck at the
    // capacity however much more comes, and the held queue drains only as
    // slots free, which new arrivals take as fast: no ground for a
    // scale-down (StabiliseAndBound).
    // (The backlog counted in full while saturated was tried: 3.75x the
    // cost on the Azure trace, its bursts' queues feeding the rise record.)
    saturated_ = ready_slots > 0 && d.queued.value_or(0) > 0 &&
                 d.in_flight.value_or(0) + d.queued.value_or(0) > ready_slots;
    std::optional<double> c;
    if (d.in_flight || d.queued) {
      const double backlog_weight =
          lead > absl::ZeroDuration()
              ? std::min(1.0, service_s / absl::ToDoubleSeconds(lead))
              : 1.0;
      c = d.in_flight.value_or(0) + d.queued.value_or(0) * backlog_weight;
    }
    // Arrivals alone give the load by Little's law (rate x service time).
    // (Taking the larger of the two when both are known was tried on the
    // Azure and Mooncake traces: it cost 1-16 % more for no fewer cold
    // starts, so in-flight + queued wins when present.)
    if (!c && d.arrivals && dt > absl::ZeroDuration()) {
      c = *d.arrivals / absl::ToDoubleSeconds(dt) * service_s;
    }
    // Arrivals while no replica is ready, from the first one: the offered
    // load at zero (ForecastDemand).
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
    if (!c) {
      continue;  // carries no demand information
    }
    const double conc = std::max(0.0, *c);
    if (d.partial && conc <= config_.idle_concurrency &&
        d.arrivals.value_or(0) <= 0) {
      // Nothing seen, but not everything is visible: no information (it
      // must not start an idle period). Staleness then holds replicas.
      continue;
    }
    if (first_sample_at_ == absl::InfinitePast()) {
      first_sample_at_ = d.at;
    }
    if (!last_sample_at_) {
      // The first sample: what came before it is unknown, so an idle
      // endpoint has been idle since now -- not since the epoch (a
      // restarted controller must not scale everything to zero at once).
      idle_since_ = d.at;
    }
    last_sample_at_ = d.at;
    const bool active =
        conc > config_.idle_concurrency || d.arrivals.value_or(0) > 0;
    demand_.Record(d.at, conc);
    season_.Record(d.at, conc);
    const double requests =
        d.arrivals ? *d.arrivals
                   : (active && service_s > 0
                          ? conc * absl::ToDoubleSeconds(dt) / service_s
                          : 0.0);
    gaps_ = Decay(gaps_, dt, config_.cold_start_budget_half_life);
    // At zero every request that arrives waits in the activator's hold,
    // unless the hold refused it (full) or it gave up: then the held queue
    // (while it holds any) is not the demand, and the climb once replicas
    // are ready is the backlog's recovery, not a rise of the endpoint's
    // own. On ServeGen a stream of ~260 requests/s started at zero filled
    // the hold (1,000 held, 12,572 refused); the climb to ~2,500 in flight
    // sat in the rise record for its 21 minutes and held 40-48 warm
    // replicas over a load of 34-39 (docs/benchmarks.md). A tenth of
    // slack: the arrival figure is the larger of two counts.
    const double held = d.queued.value_or(0);
    if (ready == 0 && held > 0 && at_zero_since_ != absl::InfiniteFuture() &&
        at_zero_arrivals_ > 1.1 * held + 1) {
      censored_at_ = d.at;
    }
    if (active) {
      rises_.Record(d.at, conc, lead, censored_at_);
      if (idle_ && last_active_at_) {
        idle_gaps_.Record(d.at - idle_since_);
        ++gaps_recorded_;
        gaps_ += 1;
        // A busy period starts: count the requests of its first lead, the
        // ones a cold start here would have delayed.
        burst_start_ = d.at;
        burst_requests_ = 0;
        counting_burst_ = true;
      }
      idle_ = false;
      last_active_at_ = d.at;
    } else if (!idle_) {
      idle_ = true;
      idle_since_ = d.at;
      // The gap's keep-alive is priced at the rate seen when it starts, so
      // it does not move while the gap lasts (QuietUntil's promise).
      if (gaps_ > 0) {
        if (!budget_) {
          budget_ = std::make_unique<BudgetPrice>();
        }
        budget_->idle_gaps_per_day = GapsPerDay(d.at);
      }
    }
    if (counting_burst_) {
      burst_requests_ += requests;
      if (idle_ || d.at - burst_start_ >= lead) {
        requests_per_cold_start_ =
            requests_per_cold_start_ == 0
                ? burst_requests_
                : 0.7 * requests_per_cold_start_ + 0.3 * burst_requests_;
        counting_burst_ = false;
      }
    }

    // Cold-start budget: requests seen, and those that met no ready replica.
    requests_ =
        Decay(requests_, dt, config_.cold_start_budget_half_life) + requests;
    cold_start_requests_ =
        Decay(cold_start_requests_, dt, config_.cold_start_budget_half_life) +
        (ready == 0 ? requests : 0.0);

    // Online capacity correction from measured decode speed.
    if (tier_ >= 0 && d.output_tokens_per_s && d.in_flight && ready > 0) {
      Tier& t = tiers_[static_cast<size_t>(tier_)];
      const double batch = *d.in_flight / ready;
      if (batch >= 1 && t.replica) {
        // Modelled generated tokens/s of `in_flight` requests of the typical
        // shape: each yields its output tokens per service time.
        const int b = static_cast<int>(std::lround(batch));
        const double per_request_s =
            t.ttft_s + spec.workload.output_tokens *
                           t.replica->TpotSeconds(b, spec.workload);
        const double predicted =
            *d.in_flight * spec.workload.output_tokens / per_request_s;
        if (predicted > 0 && *d.output_tokens_per_s > 0) {
          const double ratio =
              std::clamp(*d.output_tokens_per_s / predicted,
                         config_.correction_min, config_.correction_max);
          t.correction = (1 - config_.correction_alpha) * t.correction +
                         config_.correction_alpha * ratio;
        }
      }
    }
    // Calibration from the engines' latency histograms, for the tier
    // serving: mean inter-token latency at the mean batch per ready replica
    // (and TTFT when nothing queued). A nonsense sample is refused and
    // recorded by the calibrator; it moves nothing.
    if (tier_ >= 0 && d.latency && d.in_flight && ready > 0) {
      Tier& t = tiers_[static_cast<size_t>(tier_)];
      if (t.replica) {
        model::LatencySample l;
        l.at = d.at;
        l.itl_s = d.latency->itl_s;
        l.itl_count = d.latency->itl_tokens;
        l.batch = *d.in_flight / ready;
        l.ttft_s = d.latency->ttft_s;
        l.ttft_count =
            d.latency->prompt_tokens > 0 ? d.latency->ttft_requests : 0;
        l.prompt_tokens = d.latency->prompt_tokens;
        l.waiting = d.queued.value_or(0) / ready;
        (void)t.calibrator.Add(l, *t.replica, spec.workload);
      }
    }
    last_concurrency_ = conc;
  }
}

// --- Spot and tiers ---------------------------------------------------------

bool Decider::SpotUnhealthy(const Snapshot& s, const Tier& t, absl::Time now,
                            absl::Duration lead) const {
  if (t.spot < 0) {
    return false;
  }
  const std::string& spot_class =
      s.spec->variants[static_cast<size_t>(t.spot)].gpu_class;
  for (const SpotHealth& h : s.spot) {
    if (h.gpu_class != spot_class) {
      continue;
    }
    if (h.last_preemption &&
        now - *h.last_preemption < config_.spot_unhealthy_for) {
      return true;
    }
    if (h.last_failed_placement &&
        now - *h.last_failed_placement < config_.spot_unhealthy_for) {
      return true;
    }
  }
  const absl::Duration timeout =
      std::max(config_.spot_placement_timeout, 2 * lead);
  for (absl::Time started : s.variants[static_cast<size_t>(t.spot)].starting) {
    if (now - started > timeout) {
      return true;  // not placed / not ready in time
    }
  }
  return false;
}

Decider::TierPlan Decider::Plan(const Snapshot& s, int tier, int replicas,
                                double demand, bool spot_unhealthy,
                                bool keep_ready) const {
  const EndpointSpec& spec = *s.spec;
  const Tier& t = tiers_[static_cast<size_t>(tier)];
  TierPlan p;
  p.replicas = replicas;
  const int cap = Capacity(t);
  p.meets_slo =
      cap > 0 && t.ttft_s <= absl::ToDoubleSeconds(spec.slo.ttft) &&
      CeilDiv(demand, cap * config_.target_utilization) <= spec.max_replicas;
  const auto price = [&](int v) {
    return v < 0 ? 0.0
                 : variants_[static_cast<size_t>(v)].price_per_replica_hour;
  };
  // All on one variant when the tier has only one, or spot is not cheaper.
  const bool spot_only = t.on_demand < 0;
  const bool on_demand_only =
      t.spot < 0 || (!spot_only && price(t.spot) >= price(t.on_demand));
  if (spot_only) {
    p.spot = replicas;
  } else if (on_demand_only) {
    p.on_demand = replicas;
  } else {
    int floor = 0;
    if (spec.mode == Mode::kRealtime) {
      // The SLO floor: what the current demand needs, and the minimum.
      floor = std::max(CeilDiv(demand, cap * config_.target_utilization),
                       spec.min_replicas);
    }
    p.on_demand = std::min(replicas, floor);
    p.spot = replicas - p.on_demand;
    const int ready_od_now = s.variants[static_cast<size_t>(t.on_demand)].ready;
    const int ready_spot_all = s.variants[static_cast<size_t>(t.spot)].ready;
    if (keep_ready && replicas <= ready_od_now + ready_spot_all) {
      p.on_demand = std::min(replicas, ready_od_now);
      p.spot = replicas - p.on_demand;
    }
    // Spot fallback: on-demand replaces the spot replicas not ready.
    if (spot_unhealthy || t.fallback) {
      p.on_demand += std::max(0, p.spot - ready_spot_all);
    }
    // Make-before-break within the tier: ready replicas of one type stay
    // while the replicas of the other type meant to replace them start.
    const int od_missing = std::max(0, p.on_demand - ready_od_now);
    const int spot_missing = std::max(0, p.spot - ready_spot_all);
    p.spot = std::max(p.spot, std::min(ready_spot_all, p.spot + od_missing));
    p.on_demand = std::max(p.on_demand,
                           std::min(ready_od_now, p.on_demand + spot_missing));
  }
  p.cost_per_hour = p.on_demand * price(t.on_demand) + p.spot * price(t.spot);
  return p;
}

// Idle gaps per day: the decayed gap count over its own time constant,
// corrected for a history shorter than that (a constant rate g sums to
// g H / ln 2 (1 - 2^(-t/H)) after t).
double Decider::GapsPerDay(absl::Time now) const {
  if (first_sample_at_ == absl::InfinitePast() || gaps_ <= 0) {
    return 0;
  }
  const double h = absl::ToDoubleSeconds(config_.cold_start_budget_half_life);
  const double t = std::max(1.0, absl::ToDoubleSeconds(now - first_sample_at_));
  const double seen = h / std::numbers::ln2 * (1 - std::exp2(-t / h));
  return gaps_ / seen * 86400;
}

// The keep-alive for the current or next idle gap: the cost-optimal
// min(histogram window, T*), the pre-warm when a gap is predicted, the
// SLO's cause to keep longer, and what that costs a day, bounded by
// slo.maxKeepAliveCostPerDayUSD (docs/policy.md, rule 5).
Decider::KeepAlivePlan Decider::PlanKeepAlive(const EndpointSpec& spec,
                                              const Tier& tier,
                                              absl::Duration tier_lead) const {
  const Variant& keep_variant = variants_[static_cast<size_t>(
      tier.on_demand >= 0 && (tier.spot < 0 || spec.mode == Mode::kRealtime)
          ? tier.on_demand
          : tier.spot)];
  const double idle_rate_per_s = keep_variant.price_per_replica_hour / 3600.0;
  const double burn_usd = idle_rate_per_s * absl::ToDoubleSeconds(tier_lead);
  const double penalty_usd = spec.slo.cold_start_penalty_usd.value_or(burn_usd);
  const absl::Duration break_even =
      idle_rate_per_s > 0
          ? absl::Seconds((burn_usd + penalty_usd) / idle_rate_per_s)
          : absl::InfiniteDuration();
  const IdleHistogram::Windows win = idle_gaps_.Compute();
  const double cold_start_cost_usd = burn_usd + penalty_usd;
  const bool over_budget =
      requests_ >= 20 &&
      cold_start_requests_ > spec.slo.max_cold_start_fraction * requests_;
  absl::Duration keep_alive;
  absl::Duration prewarm_from = absl::InfiniteDuration();
  if (win.prewarm > absl::ZeroDuration()) {
    // A predicted gap: unload after the grace, come back one lead early.
    keep_alive = std::min(config_.scale_to_zero_grace, break_even);
    prewarm_from = std::max(absl::ZeroDuration(), win.prewarm - tier_lead);
  } else {
    keep_alive = std::min(win.warm_until, break_even);
    keep_alive =
        std::max(keep_alive, std::min(config_.scale_to_zero_grace, break_even));
  }
  // The SLO is cause to keep longer than T*, in two ways (only without a
  // predicted gap to pre-warm for: the pre-warm is what avoids those cold
  // starts).
  absl::Duration slo_keep;
  if (prewarm_from == absl::InfiniteDuration()) {
    // Predicted: a keep-alive K lets the gaps longer than K end in a cold
    // start, each delaying the requests of a busy period's first lead
    // (measured). Expected cold fraction = gaps/request x P(gap > K) x
    // requests/cold start; keep K long enough that it is within f.
    // The budget is what the SLO allows minus what was already spent (at
    // least a quarter of it, so one early burst does not pin the endpoint).
    if (requests_ > 0 && gaps_ > 0 && requests_per_cold_start_ > 0) {
      const double f = spec.slo.max_cold_start_fraction;
      const double budget =
          std::max(f / 4, f - cold_start_requests_ / requests_);
      const double gaps_per_request = gaps_ / requests_;
      const double allowed =
          budget / (gaps_per_request * requests_per_cold_start_);
      slo_keep = idle_gaps_.KeepAliveCovering(allowed);
    }
    // Observed: cold starts over budget extend it to the histogram's tail.
    if (over_budget) {
      slo_keep = std::max(slo_keep, win.warm_until);
    }
  }
  const absl::Duration ski_keep = keep_alive;
  KeepAlivePlan plan;
  keep_alive = std::max(keep_alive, slo_keep);

  // The budget's price: the idle time the longer keep-alive spends per gap,
  // times the gaps a day. Nothing to price before the first idle gap: no
  // spend beyond the ski-rental keep-alive is expected, nothing to bound.
  const std::optional<double>& cap = spec.slo.max_keep_alive_cost_per_day_usd;
  const bool priced = idle_gaps_.samples() > 0 && gaps_ > 0;
  if (priced && !budget_) {
    budget_ = std::make_unique<BudgetPrice>();
  }
  // At the gap rate seen when the last idle gap began: it does not move
  // while a gap lasts (QuietUntil's promise), and the price is not worked
  // out afresh at every busy tick.
  const double gaps_per_day = priced ? budget_->idle_gaps_per_day : 0;
  BudgetPrice no_gaps;
  no_gaps.keep = no_gaps.asked = keep_alive;
  BudgetPrice& bp = priced ? *budget_ : no_gaps;
  if (priced &&
      (bp.version != gaps_recorded_ || bp.gaps_per_day != gaps_per_day ||
       bp.ski_keep != ski_keep || bp.asked != keep_alive || bp.cap != cap ||
       bp.lead != tier_lead)) {
    bp = {.idle_gaps_per_day = bp.idle_gaps_per_day,
          .version = gaps_recorded_,
          .gaps_per_day = gaps_per_day,
          .ski_keep = ski_keep,
          .asked = keep_alive,
          .cap = cap,
          .lead = tier_lead,
          .keep = keep_alive};
    const double idle_rate_per_day = gaps_per_day * idle_rate_per_s;
    const absl::Duration ski_mean = idle_gaps_.MeanClipped(ski_keep);
    const auto extra_per_day = [&](absl::Duration k) {
      return k > ski_keep
                 ? idle_rate_per_day * absl::ToDoubleSeconds(
                                           idle_gaps_.MeanClipped(k) - ski_mean)
                 : 0.0;
    };
    bp.needs_per_day = extra_per_day(keep_alive);
    if (cap && bp.needs_per_day > *cap) {
      // The longest keep-alive (a bin edge short of the one asked for) the
      // bound pays for: the spend grows with the keep-alive, so bisect the
      // edges (ski_keep itself costs nothing beyond itself).
      int64_t lo = FloorDiv(ski_keep, IdleHistogram::kBin);  // edge lo fits
      int64_t hi = FloorDiv(keep_alive - absl::Nanoseconds(1),
                            IdleHistogram::kBin) +
                   1;  // edge hi does not
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        (extra_per_day(IdleHistogram::kBin * mid) <= *cap ? lo : hi) = mid;
      }
      bp.keep = std::max(ski_keep, IdleHistogram::kBin * lo);
    }
    bp.cost_per_day = extra_per_day(bp.keep);
    // Gaps that end cold: longer than the keep-alive, and not ending inside
    // the pre-warmed window (when there is one).
    const auto longer = [&](absl::Duration k) {
      double p = idle_gaps_.FractionLonger(k);
      if (prewarm_from < absl::InfiniteDuration()) {
        const absl::Duration ready = std::max(k, prewarm_from + tier_lead);
        p -= std::max(0.0, idle_gaps_.FractionLonger(ready) -
                               idle_gaps_.FractionLonger(win.warm_until));
      }
      return std::max(0.0, p);
    };
    bp.longer_than_ski = longer(ski_keep);
    bp.longer_than_keep = longer(bp.keep);
  }
  const auto cold_fraction = [&](double longer) {
    return requests_ > 0 ? std::clamp(gaps_ / requests_ * longer *
                                          requests_per_cold_start_,
                                      0.0, 1.0)
                         : 0.0;
  };
  const double needs_per_day = bp.needs_per_day;
  keep_alive = bp.keep;
  plan.budget_capped = bp.keep < bp.asked;
  plan.budget_cost_per_day = bp.cost_per_day;
  plan.cold_fraction_at_break_even = cold_fraction(bp.longer_than_ski);
  plan.cold_fraction_expected = cold_fraction(bp.longer_than_keep);

  // Why the keep-alive exceeds T*, when it does, and what that costs.
  std::string keep_cause;
  if (plan.budget_capped) {
    keep_cause = absl::StrFormat(
        "; cold-start budget held to slo.maxKeepAliveCostPerDayUSD $%.2f/day "
        "(it needs %s, $%.2f/day): ~%.1f%% of requests cold",
        *cap, Secs(std::max(slo_keep, ski_keep)), needs_per_day,
        100 * plan.cold_fraction_expected);
  } else if (keep_alive > break_even) {
    keep_cause = absl::StrFormat(
        "; %s, ~$%.2f/day idle (%.1f%% cold at break-even)",
        over_budget ? "cold starts over budget"
                    : absl::StrCat("SLO needs ", Secs(slo_keep)),
        plan.budget_cost_per_day, 100 * plan.cold_fraction_at_break_even);
  }

  plan.keep_alive = keep_alive;
  plan.break_even = break_even;
  plan.cold_start_cost_usd = cold_start_cost_usd;
  plan.idle_cost_per_hour = keep_variant.price_per_replica_hour;
  plan.prewarm_from = prewarm_from;
  plan.windows = win;
  plan.cause = std::move(keep_cause);
  return plan;
}

// --- Decide -----------------------------------------------------------------

Decision Decider::Hold(const Snapshot& s, ScaleReason reason,
                       std::string message) {
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
    if (i < variants_.size()) {
      d.cost_per_hour += v.replicas * variants_[i].price_per_replica_hour;
    }
    d.variants.push_back(std::move(v));
  }
  return d;
}

// Rule 9: a spec that does not validate, a snapshot that does not match it,
// or demand data missing or stale: hold.
std::optional<Decision> Decider::CheckInputs(const Snapshot& s,
                                             absl::Time now) {
  if (s.spec == nullptr || s.catalog == nullptr) {
    return Hold(s, ScaleReason::kInvalidSpec,
                "snapshot without spec or catalog");
  }
  const EndpointSpec& spec = *s.spec;
  if (spec.generation != generation_ || catalog_seen_ != s.catalog) {
    spec_status_ = Derive(s);
  }
  spec_seen_ = s.spec;
  if (!spec_status_.ok()) {
    return Hold(s, ScaleReason::kInvalidSpec,
                std::string(spec_status_.message()));
  }
  if (s.variants.size() != spec.variants.size()) {
    return Hold(
        s, ScaleReason::kInvalidSpec,
        absl::StrCat("snapshot has ", s.variants.size(), " variant states for ",
                     spec.variants.size(), " variants"));
  }
  Ingest(s);
  if (!last_sample_at_ || now - *last_sample_at_ > config_.stale_after) {
    return Hold(
        s, ScaleReason::kNoData,
        last_sample_at_
            ? absl::StrCat("no demand sample for ",
                           Secs(now - *last_sample_at_), " (stale after ",
                           Secs(config_.stale_after), "): holding replicas")
            : std::string("no demand sample yet: holding replicas"));
  }
  return std::nullopt;
}

Decision Decider::Decide(const Snapshot& s, absl::Time now) {
  quiet_until_ = absl::InfinitePast();
  if (std::optional<Decision> hold = CheckInputs(s, now)) {
    return *std::move(hold);
  }
  Step st;
  st.s = &s;
  st.now = now;
  for (const VariantState& v : s.variants) {
    st.ready_total += v.ready;
    st.asked_total += std::max(v.desired, v.ready);
  }
  ForecastDemand(st);
  ChooseTier(st);
  SizeLoadAndWarmPool(st);
  PlanIdle(st);
  StabiliseAndBound(st);
  Decision d = SplitOverVariants(st);
  Explain(st, d);
  quiet_until_ = QuietHorizon(st);
  return d;
}

absl::Time Decider::QuietHorizon(const Step& st) const {
  if (!idle_ || panic_ || counting_burst_ || demand_partial_ ||
      last_concurrency_ != 0 || switching_from_ >= 0 || candidate_tier_ >= 0 ||
      st.held || !last_sample_at_ ||
      demand_.Max(st.now, demand_.window()).value_or(0) != 0) {
    return absl::InfinitePast();
  }
  // With every demand window at zero the forecast stays zero; what is left
  // depends on time alone, through these.
  absl::Time next = absl::InfiniteFuture();
  const auto after = [&](absl::Time t) {
    if (t > st.now) {
      next = std::min(next, t);
    }
  };
  if (st.keep_alive_until) {
    after(*st.keep_alive_until);
  }
  if (st.prewarm_at) {
    after(*st.prewarm_at);
  }
  after(idle_since_ + st.keep.windows.warm_until);
  for (const SpotHealth& h : st.s->spot) {
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
  const absl::Duration h = config_.cold_start_budget_half_life;
  if (requests_ >= kBudgetRequests && h > absl::ZeroDuration()) {
    const absl::Time crossing = *last_sample_at_ +
                                h * std::log2(requests_ / kBudgetRequests) -
                                absl::Seconds(10);
    if (crossing <= st.now) {
      return absl::InfinitePast();
    }
    next = std::min(next, crossing);
  }
  return next;
}

void Decider::SkipQuiet(absl::Time first, absl::Duration step, int64_t n) {
  if (n <= 0 || !last_sample_at_) {
    return;
  }
  const absl::Duration h = config_.cold_start_budget_half_life;
  // Decay() over one step, computed as Decay computes it, so repeated
  // multiplication gives the very bits per-sample decays give.
  const double per_step =
      step > absl::ZeroDuration() && h > absl::ZeroDuration()
          ? std::exp2(-absl::FDivDuration(step, h))
          : 1.0;
  const absl::Time last = first + step * (n - 1);
  for (int64_t i = 0; i < n; ++i) {
    const absl::Time t = first + step * i;
    const absl::Duration dt = t - *last_sample_at_;
    if (dt == step) {
      gaps_ *= per_step;
      requests_ *= per_step;
      cold_start_requests_ *= per_step;
    } else {
      gaps_ = Decay(gaps_, dt, h);
      requests_ = Decay(requests_, dt, h);
      cold_start_requests_ = Decay(cold_start_requests_, dt, h);
    }
    season_.Record(t, 0);
    // Only what the windows still hold after the last skipped sample.
    if (t > last - demand_.window()) {
      demand_.Record(t, 0);
    }
    if (t > last - kLoadTargetWindow) {
      load_targets_.Record(t, last_raw_target_);
    }
    last_sample_at_ = t;
  }
}

// Rules 2 and 3: the demand windows, panic, and the forecast one cold-start
// lead ahead (trend and time of day), for the serving tier (the first at
// zero).
void Decider::ForecastDemand(Step& st) {
  const Snapshot& s = *st.s;
  const absl::Time now = st.now;
  const int serving = tier_ >= 0 ? tier_ : 0;
  const absl::Duration lead = Lead(s, serving);
  st.stable = demand_.Average(now, config_.stable_window).value_or(0);
  const double recent =
      demand_.Average(now, config_.panic_window).value_or(last_concurrency_);
  const double cap_serving = Capacity(tiers_[static_cast<size_t>(serving)]) *
                             config_.target_utilization;

  if (panic_ && now >= panic_until_) {
    panic_ = false;
  }
  if (st.ready_total > 0 && cap_serving > 0 &&
      CeilDiv(recent, cap_serving) >=
          config_.panic_threshold * st.ready_total) {
    panic_ = true;
    panic_until_ = now + config_.stable_window;
  }
  st.base = panic_ ? std::max(st.stable, recent) : st.stable;
  st.forecast = st.base;
  st.load_reason = panic_ ? ScaleReason::kPanic : ScaleReason::kSteady;
  // A trend counts only when a line explains the window well (a ramp, not
  // a step -- panic handles steps -- nor noise) and the window is mostly
  // observed.
  const std::optional<TimeBuckets::Fit> fit =
      demand_.Slope(now, config_.trend_window);
  if (fit && fit->slope > 0 && fit->r2 >= config_.trend_min_r2 &&
      fit->buckets * absl::Seconds(1) * 2 >= config_.trend_window) {
    const double trend = recent + fit->slope * absl::ToDoubleSeconds(lead);
    if (trend > st.forecast) {
      st.forecast = trend;
      st.forecast_note =
          absl::StrFormat("trend +%.2f/s, R2 %.2f", fit->slope, fit->r2);
    }
  }
  // With no replica ready nothing is in flight and the held queue counts
  // S / L, so an endpoint at a steady hundred requests a second started
  // from zero grew by a few replicas a tick while its hold overflowed
  // (docs/benchmarks.md). What the replicas asked for now meet when they
  // are ready is the offered load: Little's law, the arrival rate times
  // the service time at the batch they run (their capacity at the TPOT
  // SLO). The rate is over the whole time at zero so far, at Poisson's
  // one-sigma lower bound (n - sqrt n) / t, so a few requests at zero ask
  // for no more than before. A floor on the forecast, not a demand sample:
  // the held queue's ramp still feeds the trend.
  if (st.ready_total == 0 && last_sample_at_ &&
      *last_sample_at_ > at_zero_since_) {
    const double n = at_zero_arrivals_;
    const double seconds = absl::ToDoubleSeconds(std::max(
        *last_sample_at_ - at_zero_since_, config_.offered_load_min_window));
    const double offered =
        (n - std::sqrt(n)) / seconds * LoadedServiceSeconds(*s.spec);
    if (offered > st.forecast) {
      st.forecast = offered;
      st.forecast_note =
          absl::StrFormat("offered load at zero %.1f (%.0f requests in %.0f s)",
                          offered, n, seconds);
    }
  }
  if (const std::optional<double> ratio = season_.Ratio(now, lead);
      ratio && *ratio > 1) {
    const double seasonal = st.base * std::min(*ratio, 4.0);
    if (seasonal > st.forecast) {
      st.forecast = seasonal;
      st.forecast_note = absl::StrFormat("time of day x%.2f", *ratio);
    }
  }
}

int Decider::ReplicasFor(int tier, double demand) const {
  const double cap =
      Capacity(tiers_[static_cast<size_t>(tier)]) * config_.target_utilization;
  return cap > 0 ? std::max(1, CeilDiv(demand, cap)) : 0;
}

// Rule 7: the cheapest tier meeting the SLO at the forecast; a switch after
// it has saved enough for long enough (at once when the current tier cannot
// meet the SLO), made before the old tier is broken (SplitOverVariants).
void Decider::ChooseTier(Step& st) {
  const Snapshot& s = *st.s;
  const absl::Time now = st.now;
  int best = -1;
  double best_cost = std::numeric_limits<double>::infinity();
  st.unhealthy.assign(tiers_.size(), false);
  for (size_t t = 0; t < tiers_.size(); ++t) {
    const int ti = static_cast<int>(t);
    st.unhealthy[t] = SpotUnhealthy(s, tiers_[t], now, Lead(s, ti));
    const TierPlan p =
        Plan(s, ti, ReplicasFor(ti, st.forecast), st.stable, st.unhealthy[t]);
    st.tier_options.push_back({.gpu_class = tiers_[t].gpu_class,
                               .replicas = p.replicas,
                               .on_demand = p.on_demand,
                               .spot = p.spot,
                               .capacity_per_replica = Capacity(tiers_[t]),
                               .cost_per_hour = p.cost_per_hour,
                               .meets_slo = p.meets_slo});
    if (p.meets_slo && p.cost_per_hour < best_cost) {
      best = ti;
      best_cost = p.cost_per_hour;
    }
  }
  if (best < 0) {
    best = 0;  // none meets it: the first variant, reported as such
  }
  if (st.asked_total == 0 && switching_from_ < 0) {
    tier_ = best;  // nothing running: choose freely
    candidate_tier_ = -1;
  } else if (tier_ < 0) {
    // First decision with replicas running (e.g. a controller restart):
    // adopt the tier that serves now; a move is then a normal switch.
    int most = -1;
    for (size_t i = 0; i < s.variants.size(); ++i) {
      const int n = std::max(s.variants[i].desired, s.variants[i].ready);
      if (n > most) {
        most = n;
        tier_ = variants_[i].tier;
      }
    }
  }
  if (switching_from_ >= 0 || best == tier_) {
    candidate_tier_ = -1;
    return;
  }
  const TierPlan cur =
      Plan(s, tier_, ReplicasFor(tier_, st.forecast), st.stable,
           st.unhealthy[static_cast<size_t>(tier_)]);
  const bool must = !cur.meets_slo;
  const bool cheaper =
      best_cost <= (1 - config_.tier_switch_min_saving) * cur.cost_per_hour;
  if (!must && !cheaper) {
    candidate_tier_ = -1;
    return;
  }
  if (candidate_tier_ != best) {
    candidate_tier_ = best;
    candidate_since_ = now;
  }
  if (must || now - candidate_since_ >= config_.tier_switch_sustain) {
    st.tier_note = absl::StrFormat(
        "%s -> %s: %s", tiers_[static_cast<size_t>(tier_)].gpu_class,
        tiers_[static_cast<size_t>(best)].gpu_class,
        must
            ? "current tier cannot meet the SLO"
            : absl::StrFormat("$%.2f/h vs $%.2f/h for %s", best_cost,
                              cur.cost_per_hour, Secs(now - candidate_since_)));
    switching_from_ = tier_;
    tier_ = best;
    candidate_tier_ = -1;
  }
}

// Rules 1, 3 and 4: replicas for the forecast on the chosen tier, and the
// warm pool -- the endpoint's own rises over one cold start, at the SLO's
// risk.
void Decider::SizeLoadAndWarmPool(Step& st) {
  const Tier& tier = tiers_[static_cast<size_t>(tier_)];
  st.tier_lead = Lead(*st.s, tier_);
  st.cap = Capacity(tier) * config_.target_utilization;
  st.load = st.cap > 0 ? CeilDiv(st.forecast, st.cap) : 0;
  if (st.load > CeilDiv(st.base, st.cap) && !st.forecast_note.empty()) {
    st.load_reason = ScaleReason::kScaleAhead;
  }
  if (idle_ || st.cap <= 0) {
    return;
  }
  // Rises are measured from the current level, so the spare capacity is
  // counted from it too (the forecast's own rise is already in `load`) --
  // at the replicas' whole capacity: the headroom a target utilisation
  // under 1 leaves is spare too. (Counted at the target's capacity, the
  // warm pool at utilisation 0.4 on ServeGen added $77 of replicas for no
  // request more within SLO.)
  const double full = Capacity(tier);
  const double spare = st.load * full - st.base;
  const int cap_warm = std::max(1, st.load);
  while (st.warm < cap_warm && rises_.count() >= 8 &&
         rises_.FractionAbove(spare + st.warm * full) >
             st.s->spec->slo.max_cold_start_fraction) {
    ++st.warm;
  }
  if (rises_.count() >= 8) {
    st.rise_risk_without_warm = rises_.FractionAbove(spare);
    st.rise_risk_with_warm = rises_.FractionAbove(spare + st.warm * full);
  }
}

// Rule 5: idle, keep the last replica for the keep-alive, pre-warm ahead of
// a predicted request, else scale to zero.
void Decider::PlanIdle(Step& st) {
  const Snapshot& s = *st.s;
  const Tier& tier = tiers_[static_cast<size_t>(tier_)];
  st.keep = PlanKeepAlive(*s.spec, tier, st.tier_lead);
  if (!idle_) {
    return;
  }
  const KeepAlivePlan& ka = st.keep;
  const absl::Duration idle_for = st.now - idle_since_;
  st.keep_alive_until = idle_since_ + ka.keep_alive;
  if (ka.prewarm_from < absl::InfiniteDuration()) {
    st.prewarm_at = idle_since_ + ka.prewarm_from;
  }
  int running = 0;
  for (const VariantState& v : s.variants) {
    running += v.desired;
  }
  // Keep-alive keeps what runs; it never starts a replica (pre-warm does,
  // below, when a request is predicted).
  if (idle_for < ka.keep_alive && running > 0) {
    st.idle_floor = 1;
    st.idle_reason = ScaleReason::kKeepAlive;
    st.idle_note = absl::StrFormat(
        "idle %s, keep-alive %s (%s; break-even %s%s)", Secs(idle_for),
        Secs(ka.keep_alive), IdleHistogram::BasisName(ka.windows.basis),
        Secs(ka.break_even), ka.cause);
  } else if (st.prewarm_at && st.now >= *st.prewarm_at &&
             idle_for < ka.windows.warm_until) {
    st.idle_floor = 1;
    st.idle_reason = ScaleReason::kPreWarm;
    st.idle_note = absl::StrFormat(
        "idle %s, next request predicted from %s (lead %s), warm until %s",
        Secs(idle_for), Secs(ka.windows.prewarm), Secs(st.tier_lead),
        Secs(ka.windows.warm_until));
  } else {
    st.idle_note = absl::StrFormat(
        "idle %s, past keep-alive %s (break-even %s%s)", Secs(idle_for),
        Secs(ka.keep_alive), Secs(ka.break_even), ka.cause);
  }
}

// Rule 6: no flapping (the target is the maximum of the stabilisation
// window, falls at most at the rate limit, never while panicking) and the
// spec's bounds.
void Decider::StabiliseAndBound(Step& st) {
  const Snapshot& s = *st.s;
  const EndpointSpec& spec = *s.spec;
  const Tier& tier = tiers_[static_cast<size_t>(tier_)];
  int target = st.load + st.warm;
  load_targets_.Record(st.now, target);
  TrackReneeds(last_raw_target_, target, st.now);
  const absl::Duration stab = std::max(
      {config_.scale_down_stabilization, st.tier_lead, LearnedHold(spec)});
  st.hold = stab;
  const int stabilised = std::max(
      target,
      static_cast<int>(load_targets_.Max(st.now, stab).value_or(target)));
  st.held = stabilised > target;
  last_raw_target_ = target;
  // The total this tier was asked for: the last target (spot fallback and
  // make-before-break extras are not part of it), or what runs now on the
  // first call and after a tier change.
  int current = 0;
  if (last_target_ >= 0 && last_target_tier_ == tier_) {
    current = last_target_;
  } else {
    for (int v : {tier.on_demand, tier.spot}) {
      if (v >= 0) {
        current += s.variants[static_cast<size_t>(v)].desired;
      }
    }
  }
  ScaleReason reason = st.load_reason;
  if (st.warm > 0 && !idle_) {
    reason = ScaleReason::kWarmPool;
  }
  if (idle_) {
    // Idle: the keep-alive rules the last replica; replicas beyond it step
    // down through the stabilisation window like any scale-down.
    const int extra = stabilised > 1 ? stabilised : 0;
    target = std::max(st.idle_floor, extra);
    reason =
        target > st.idle_floor ? ScaleReason::kScaleDownHeld : st.idle_reason;
  } else if (stabilised > target) {
    target = stabilised;
    reason = ScaleReason::kScaleDownHeld;
  }
  if (st.ready_total == 0 && target > 0 && !idle_) {
    reason = ScaleReason::kScaleFromZero;
  }
  if (const int paid = PaidFloor(st, target); paid > target) {
    target = paid;
    reason = ScaleReason::kScaleDownHeld;
  }
  if (demand_partial_ && target < current) {
    target = current;
    reason = ScaleReason::kPartialDemand;
  }
  // Saturated (Ingest): the stable window's lagging average is no ground
  // for a scale-down while every slot is busy and requests wait. On
  // ServeGen started at zero with clients that retry, pilotlight went from
  // 59 replicas to 53 with all 3,245 slots busy and 700 requests held
  // (docs/benchmarks.md, "Clients that try again").
  if (saturated_ && target < current) {
    target = current;
    reason = ScaleReason::kSaturated;
  }
  if (target < current) {
    const int limited = static_cast<int>(
        std::floor(current / std::max(1.0, config_.max_scale_down_rate)));
    if (limited > target) {
      target = limited;
      reason = ScaleReason::kScaleDownLimited;
    }
    if (panic_ && current > target) {
      target = current;
      reason = ScaleReason::kPanic;
    }
  }
  if (target < spec.min_replicas) {
    target = spec.min_replicas;
    reason = ScaleReason::kMinReplicas;
  }
  if (target > spec.max_replicas) {
    target = spec.max_replicas;
    reason = ScaleReason::kMaxReplicas;
  }
  last_target_ = target;
  last_target_tier_ = tier_;
  st.target = target;
  st.reason = reason;
  RecordLevels(target, st.now);
}

// Billing: replicas above `target` still inside a paid period stay until
// its last `billing_release_margin` (a release lands before the next period
// starts). A scale-down removes the newest replicas (a ReplicaSet's
// choice), so releasing level k releases every level above it too: at the
// lowest level above `target` whose period is ending, everything from it up
// goes (the ones above have paid for time not yet used, but that is spent
// whatever happens; keeping them would carry level k into a new period).
// Off at per-second-like billing.
absl::Duration Decider::Billing() const {
  if (tier_ < 0) {
    return config_.billing_granularity;
  }
  const Tier& t = tiers_[static_cast<size_t>(tier_)];
  return variants_[static_cast<size_t>(t.on_demand >= 0 ? t.on_demand : t.spot)]
      .billing;
}

int Decider::PaidFloor(Step& st, int target) const {
  const absl::Duration g = Billing();
  const int top = static_cast<int>(level_started_.size());
  if (g < DeciderConfig::kBillingHoldMin || top <= target) {
    return target;
  }
  std::optional<absl::Time> soonest;
  for (int k = std::max(1, target + 1); k <= top; ++k) {
    const absl::Time started = level_started_[static_cast<size_t>(k - 1)];
    absl::Duration rem;
    const int64_t periods = absl::IDivDuration(st.now - started, g, &rem) + 1;
    const absl::Time paid_end = started + g * periods;
    if (st.now >= paid_end - config_.billing_release_margin) {
      // k's period is ending: from k up they go; those below k stay.
      if (k - 1 > target) {
        st.paid_until = soonest;
        st.held = true;
      }
      return std::max(target, k - 1);
    }
    soonest = soonest ? std::min(*soonest, paid_end) : paid_end;
  }
  st.paid_until = soonest;
  st.held = true;
  return top;
}

void Decider::RecordLevels(int target, absl::Time now) {
  if (Billing() < DeciderConfig::kBillingHoldMin) {
    return;
  }
  const auto n = static_cast<size_t>(std::max(0, target));
  if (level_started_.size() > n) {
    level_started_.resize(n);
  }
  while (level_started_.size() < n) {
    level_started_.push_back(now);
  }
}

// Rule 6's learned hold. A level k >= 2 the load target falls below is
// pending from then; when the target reaches it again the gap is recorded.
// A level pending past the histogram's range is recorded as out of range
// (a level that never comes back must not leave only the short gaps).
void Decider::TrackReneeds(int before, int now_target, absl::Time now) {
  const int top = std::min(std::max(before, now_target), kTrackedLevels + 1);
  if (std::ssize(dropped_at_) < top - 1) {
    dropped_at_.resize(static_cast<size_t>(std::max(0, top - 1)),
                       absl::InfiniteFuture());
  }
  const absl::Duration range = IdleHistogram::kBin * IdleHistogram::kBins;
  bool evidence = false;
  for (int k = 2; k <= std::ssize(dropped_at_) + 1; ++k) {
    absl::Time& at = dropped_at_[static_cast<size_t>(k - 2)];
    if (k <= now_target) {
      if (at != absl::InfiniteFuture()) {
        reneed_gaps_.Record(now - at);
        at = absl::InfiniteFuture();
        evidence = true;
      }
    } else if (k <= before && at == absl::InfiniteFuture()) {
      at = now;
    } else if (at != absl::InfiniteFuture() && now - at > range) {
      reneed_gaps_.Record(now - at);
      at = absl::InfiniteFuture();
      evidence = true;
    }
  }
  if (evidence) {
    reneed_events_ = std::min(reneed_events_ + 1, IdleHistogram::kMinSamples);
  }
}

// Keep replicas above the first until at most the SLO's cold-start fraction
// of the re-needs would come after the hold, up to the stabilisation
// window's reach -- scaled by the evidence: a fifth of that span per tick
// that recorded a re-need, in full from the fifth. Evidence counts per tick,
// not per level: the levels one burst drops and needs again together are
// one observation of its gap, and counting them apiece made the hold jump
// from nothing to its full span on whether a burst reached one level more
// (docs/benchmarks.md, "Live versus simulated", item 8).
absl::Duration Decider::LearnedHold(const EndpointSpec& spec) const {
  if (reneed_events_ == 0) {
    return absl::ZeroDuration();
  }
  const absl::Duration full =
      std::min(reneed_gaps_.KeepAliveCovering(spec.slo.max_cold_start_fraction),
               kLoadTargetWindow);
  return full * reneed_events_ / IdleHistogram::kMinSamples;
}

// Rule 8 and the make-before-break of rule 7: the target split over the
// tier's on-demand and spot variants (spot fallback while spot is
// unhealthy); the tier switched from keeps serving until the new one is
// ready for the target.
Decision Decider::SplitOverVariants(Step& st) {
  const Snapshot& s = *st.s;
  const EndpointSpec& spec = *s.spec;
  Tier& tier = tiers_[static_cast<size_t>(tier_)];
  const bool unhealthy = st.unhealthy[static_cast<size_t>(tier_)];
  st.plan = Plan(s, tier_, st.target, st.stable, unhealthy,
                 /*keep_ready=*/idle_);
  const TierPlan& plan = st.plan;
  if (tier.spot >= 0) {
    const int ready_spot = s.variants[static_cast<size_t>(tier.spot)].ready;
    if (unhealthy && plan.spot > ready_spot) {
      tier.fallback = true;
    } else if (ready_spot >= plan.spot) {
      tier.fallback = false;
    }
  }

  Decision d;
  d.valid = true;
  d.reason = st.reason;
  d.tier = tier.gpu_class;
  d.load_replicas = st.load;
  d.warm_pool = std::max(0, st.target - st.load);
  d.demand_concurrency = st.stable;
  d.forecast_concurrency = st.forecast;
  d.capacity_per_replica = Capacity(tier);
  d.model_capacity_per_replica = tier.model_capacity;
  d.decode_calibration = tier.calibrator.decode().scale;
  d.calibration = tier.calibrator.Describe();
  d.panic = panic_;
  d.cold_start_lead = st.tier_lead;
  d.keep_alive = st.keep.keep_alive;
  d.break_even = st.keep.break_even;
  d.keep_alive_until = st.keep_alive_until;
  d.prewarm_at = st.prewarm_at;
  const double on_demand_price =
      variants_[static_cast<size_t>(tier.on_demand >= 0 ? tier.on_demand
                                                        : tier.spot)]
          .price_per_replica_hour;
  d.always_on_cost_per_hour = std::max(1, st.load) * on_demand_price;
  Economics& e = d.economics;
  e.idle_cost_per_hour = st.keep.idle_cost_per_hour;
  e.cold_start_cost_usd = st.keep.cold_start_cost_usd;
  e.budget_cost_per_day = st.keep.budget_cost_per_day;
  e.cold_fraction_at_break_even = st.keep.cold_fraction_at_break_even;
  e.cold_fraction_expected = st.keep.cold_fraction_expected;
  e.budget_capped = st.keep.budget_capped;
  e.warm_pool_cost_per_hour = d.warm_pool * on_demand_price;
  // One independent chance per lead: 3600 / lead chances an hour.
  const double leads_per_hour =
      st.tier_lead > absl::ZeroDuration()
          ? 3600.0 / absl::ToDoubleSeconds(st.tier_lead)
          : 0;
  e.cold_starts_per_hour_without_warm =
      leads_per_hour * st.rise_risk_without_warm;
  e.cold_starts_per_hour_with_warm = leads_per_hour * st.rise_risk_with_warm;
  e.on_demand_only_cost_per_hour =
      (plan.on_demand + plan.spot) * on_demand_price;
  e.spot_unhealthy = unhealthy;
  e.tiers = std::move(st.tier_options);

  bool old_drained = true;
  if (switching_from_ >= 0) {
    // The new tier must be ready for its target before the old one drains.
    int new_ready = 0;
    for (int v : {tier.on_demand, tier.spot}) {
      if (v >= 0) {
        new_ready += s.variants[static_cast<size_t>(v)].ready;
      }
    }
    old_drained = new_ready >= st.target;
  }
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    VariantDecision v;
    v.deployment = spec.variants[i].deployment;
    v.previous = s.variants[i].desired;
    const int vt = variants_[i].tier;
    if (vt == tier_) {
      const bool is_spot = static_cast<int>(i) == tier.spot;
      v.replicas = is_spot ? plan.spot : plan.on_demand;
      v.reason = st.reason;
      // On-demand beyond its floor (Realtime: what current demand needs;
      // Batch: none) while spot is unhealthy is there for the fallback.
      const int od_floor =
          spec.mode == Mode::kRealtime
              ? std::min(st.target, std::max(CeilDiv(st.stable, st.cap),
                                             spec.min_replicas))
              : 0;
      if (!is_spot && tier.spot >= 0 && plan.on_demand > od_floor &&
          (tier.fallback || unhealthy)) {
        v.reason = ScaleReason::kSpotFallback;
      }
      if (switching_from_ >= 0) {
        v.reason = ScaleReason::kTierSwitch;
      }
    } else if (vt == switching_from_ && !old_drained) {
      v.replicas = s.variants[i].desired;  // keep serving until the new is up
      v.reason = ScaleReason::kTierSwitch;
    } else {
      v.replicas = 0;
      v.reason = vt == switching_from_ ? ScaleReason::kTierSwitch
                                       : ScaleReason::kUnchanged;
    }
    if (v.replicas == v.previous && v.reason != ScaleReason::kTierSwitch &&
        v.reason != ScaleReason::kSpotFallback) {
      v.reason = ScaleReason::kUnchanged;
    }
    d.cost_per_hour += v.replicas * variants_[i].price_per_replica_hour;
    d.variants.push_back(std::move(v));
  }
  if (switching_from_ >= 0 && old_drained) {
    switching_from_ = -1;
  }
  return d;
}

// The message: one line with the numbers, per decision and per variant.
void Decider::Explain(const Step& st, Decision& d) const {
  const Snapshot& s = *st.s;
  const Tier& tier = tiers_[static_cast<size_t>(tier_)];
  const std::string sizing = absl::StrFormat(
      "demand %.1f in flight, forecast %.1f in %s (cold start %s)%s, "
      "capacity %d/replica -> %d + warm %d on %s",
      st.stable, st.forecast, Secs(st.tier_lead),
      s.variants[static_cast<size_t>(std::max(tier.on_demand, tier.spot))]
                  .cold_start.samples >= 3
          ? "p90"
          : "model",
      st.forecast_note.empty() ? "" : absl::StrCat(" [", st.forecast_note, "]"),
      d.capacity_per_replica, st.load, d.warm_pool, tier.gpu_class);
  d.message = absl::StrCat(ScaleReasonName(st.reason), ": ",
                           idle_ ? st.idle_note : sizing);
  if (st.paid_until) {
    d.message = absl::StrCat(d.message, "; billing: kept until its paid ",
                             Secs(Billing()), " period ends in ",
                             Secs(*st.paid_until - st.now));
  } else if (st.held) {
    d.message = absl::StrCat(
        d.message, "; scale-down held ", Secs(st.hold),
        st.hold > config_.scale_down_stabilization && st.hold > st.tier_lead
            ? " (learned: replicas above the first are "
              "needed again within it)"
            : "");
  }
  if (!st.tier_note.empty()) {
    d.message = absl::StrCat(d.message, "; tier switch ", st.tier_note);
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

}  // namespace pilotlight::policy
