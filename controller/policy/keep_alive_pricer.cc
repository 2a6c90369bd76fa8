#include "controller/policy/keep_alive_pricer.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/policy/decision.h"
#include "controller/policy/time_window.h"

namespace pilotlight::policy {
namespace {

// The SLO's keep-alive (only without a predicted gap to pre-warm for: the
// pre-warm is what avoids those cold starts), in two ways. Predicted: a
// keep-alive K lets the gaps longer than K end in a cold start, each
// delaying the requests of a busy period's first lead; keep K long enough
// that gaps/request x P(gap > K) x requests/cold start is within the
// budget -- what the SLO allows minus what was already spent, at least a
// quarter of it, so one early burst does not pin the endpoint. Observed:
// cold starts over budget extend it to the histogram's tail.
absl::Duration SloKeepAlive(const EndpointSpec& spec, const IdleEvidence& e,
                            const IdleHistogram::Windows& win,
                            bool over_budget) {
  const ColdStartCounts& c = e.counts;
  absl::Duration slo_keep;
  if (c.requests > 0 && c.gaps > 0 && c.requests_per_cold_start > 0) {
    const double f = spec.slo.max_cold_start_fraction;
    const double budget =
        std::max(f / 4, f - c.cold_start_requests / c.requests);
    const double gaps_per_request = c.gaps / c.requests;
    const double allowed =
        budget / (gaps_per_request * c.requests_per_cold_start);
    slo_keep = e.gaps->KeepAliveCovering(allowed);
  }
  if (over_budget) {
    slo_keep = std::max(slo_keep, win.warm_until);
  }
  return slo_keep;
}

}  // namespace

KeepAlivePlan KeepAlivePricer::Plan(const EndpointSpec& spec,
                                    const IdleEvidence& e,
                                    const KeepAliveTerms& terms) {
  const IdleHistogram& gaps = *e.gaps;
  const ColdStartCounts& c = e.counts;
  const double idle_rate_per_s = terms.price_per_replica_hour / 3600.0;
  const double burn_usd = (terms.cold_start_price_per_hour > 0
                               ? terms.cold_start_price_per_hour / 3600.0
                               : idle_rate_per_s) *
                          absl::ToDoubleSeconds(terms.lead);
  const double penalty_usd = spec.slo.cold_start_penalty_usd.value_or(burn_usd);
  KeepAlivePlan plan;
  plan.break_even =
      idle_rate_per_s > 0
          ? absl::Seconds((burn_usd + penalty_usd) / idle_rate_per_s)
          : absl::InfiniteDuration();
  plan.cold_start_cost_usd = burn_usd + penalty_usd;
  plan.idle_cost_per_hour = terms.price_per_replica_hour;
  plan.windows = gaps.Compute();
  const IdleHistogram::Windows& win = plan.windows;
  // Over budget: a cause to keep to the histogram's tail only once an idle
  // gap has been seen. Before that the tail is the histogram's default, not
  // the endpoint's, and the cold starts so far are the first busy
  // period's, which no keep-alive could have spared (a first burst of
  // requests at zero is all cold).
  const bool over_budget =
      c.requests >= 20 && gaps.samples() > 0 &&
      c.cold_start_requests > spec.slo.max_cold_start_fraction * c.requests;
  absl::Duration ski_keep;
  if (win.prewarm > absl::ZeroDuration()) {
    // A predicted gap: unload after the grace, come back one lead early.
    ski_keep = std::min(terms.grace, plan.break_even);
    plan.prewarm_from =
        std::max(absl::ZeroDuration(), win.prewarm - terms.lead);
  } else {
    ski_keep = std::max(std::min(win.warm_until, plan.break_even),
                        std::min(terms.grace, plan.break_even));
  }
  const absl::Duration slo_keep = plan.prewarm_from == absl::InfiniteDuration()
                                      ? SloKeepAlive(spec, e, win, over_budget)
                                      : absl::ZeroDuration();
  const absl::Duration asked = std::max(ski_keep, slo_keep);

  // The budget's price: the idle time the longer keep-alive spends per gap,
  // times the gaps a day. Nothing to price before the first idle gap: no
  // spend beyond the ski-rental keep-alive is expected, nothing to bound.
  // At the gap rate seen when the last idle gap began: it does not move
  // while a gap lasts (Decider::QuietUntil's promise).
  const std::optional<double>& cap = spec.slo.max_keep_alive_cost_per_day_usd;
  Price unpriced;
  unpriced.keep = unpriced.asked = asked;
  const bool priced = gaps.samples() > 0 && c.gaps > 0;
  if (priced && !price_) {
    price_ = std::make_unique<Price>();
  }
  Price& p = priced ? *price_ : unpriced;
  if (priced && (p.version != e.gaps_recorded ||
                 p.gaps_per_day != e.gaps_per_day || p.ski_keep != ski_keep ||
                 p.asked != asked || p.cap != cap || p.lead != terms.lead)) {
    Reprice(p, e, terms, ski_keep, asked, cap, plan.prewarm_from,
            win.warm_until);
  }
  const auto cold_fraction = [&](double longer) {
    return c.requests > 0 ? std::clamp(c.gaps / c.requests * longer *
                                           c.requests_per_cold_start,
                                       0.0, 1.0)
                          : 0.0;
  };
  plan.keep_alive = p.keep;
  plan.budget_capped = p.keep < p.asked;
  plan.budget_cost_per_day = p.cost_per_day;
  plan.cold_fraction_at_break_even = cold_fraction(p.longer_than_ski);
  plan.cold_fraction_expected = cold_fraction(p.longer_than_keep);

  // Why the keep-alive exceeds T*, when it does, and what that costs.
  if (plan.budget_capped) {
    plan.cause = absl::StrFormat(
        "; cold-start budget held to slo.maxKeepAliveCostPerDayUSD $%.2f/day "
        "(it needs %s, $%.2f/day): ~%.1f%% of requests cold",
        *cap, MessageSeconds(std::max(slo_keep, ski_keep)), p.needs_per_day,
        100 * plan.cold_fraction_expected);
  } else if (plan.keep_alive > plan.break_even) {
    plan.cause = absl::StrFormat(
        "; %s, ~$%.2f/day idle (%.1f%% cold at break-even)",
        over_budget ? "cold starts over budget"
                    : absl::StrCat("SLO needs ", MessageSeconds(slo_keep)),
        plan.budget_cost_per_day, 100 * plan.cold_fraction_at_break_even);
  }
  return plan;
}

void KeepAlivePricer::Reprice(Price& p, const IdleEvidence& e,
                              const KeepAliveTerms& terms,
                              absl::Duration ski_keep, absl::Duration asked,
                              const std::optional<double>& cap,
                              absl::Duration prewarm_from,
                              absl::Duration warm_until) const {
  const IdleHistogram& gaps = *e.gaps;
  p = {.version = e.gaps_recorded,
       .gaps_per_day = e.gaps_per_day,
       .ski_keep = ski_keep,
       .asked = asked,
       .cap = cap,
       .lead = terms.lead,
       .keep = asked};
  const double idle_rate_per_day =
      e.gaps_per_day * (terms.price_per_replica_hour / 3600.0);
  const absl::Duration ski_mean = gaps.MeanClipped(ski_keep);
  const auto extra_per_day = [&](absl::Duration k) {
    return k > ski_keep
               ? idle_rate_per_day *
                     absl::ToDoubleSeconds(gaps.MeanClipped(k) - ski_mean)
               : 0.0;
  };
  p.needs_per_day = extra_per_day(asked);
  if (cap && p.needs_per_day > *cap) {
    // The longest keep-alive (a bin edge short of the one asked for) the
    // bound pays for: the spend grows with the keep-alive, so bisect the
    // edges (ski_keep itself costs nothing beyond itself).
    int64_t lo = FloorDiv(ski_keep, IdleHistogram::kBin);  // edge lo fits
    int64_t hi = FloorDiv(asked - absl::Nanoseconds(1), IdleHistogram::kBin) +
                 1;  // edge hi does not
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (extra_per_day(IdleHistogram::kBin * mid) <= *cap ? lo : hi) = mid;
    }
    p.keep = std::max(ski_keep, IdleHistogram::kBin * lo);
  }
  p.cost_per_day = extra_per_day(p.keep);
  // Gaps that end cold: longer than the keep-alive, and not ending inside
  // the pre-warmed window (when there is one).
  const auto longer = [&](absl::Duration k) {
    double f = gaps.FractionLonger(k);
    if (prewarm_from < absl::InfiniteDuration()) {
      const absl::Duration ready = std::max(k, prewarm_from + terms.lead);
      f -= std::max(
          0.0, gaps.FractionLonger(ready) - gaps.FractionLonger(warm_until));
    }
    return std::max(0.0, f);
  };
  p.longer_than_ski = longer(ski_keep);
  p.longer_than_keep = longer(p.keep);
}

size_t KeepAlivePricer::HeapBytes() const { return price_ ? sizeof(Price) : 0; }

}  // namespace pilotlight::policy
