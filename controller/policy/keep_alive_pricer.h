// KeepAlivePricer: how long an idle endpoint keeps its last replica, and
// what that costs. The ski-rental break-even T* = B / r bounds the
// keep-alive the idle-gap histogram asks for (B: the GPU time a cold start
// burns plus the SLO's penalty; r: the replica's idle price); the SLO's
// cold-start budget is cause to keep longer, at a price per day that
// slo.maxKeepAliveCostPerDayUSD may bound (docs/policy.md, rule 5). The
// price is worked out again only when what it depends on changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "controller/policy/demand_learner.h"
#include "controller/policy/endpoint_spec.h"
#include "controller/policy/idle_histogram.h"

namespace pilotlight::policy {

// What the endpoint's history says about its idle gaps.
struct IdleEvidence {
  const IdleHistogram* gaps = nullptr;  // the idle gaps seen
  uint32_t gaps_recorded = 0;           // a version of `gaps`
  double gaps_per_day = 0;  // when the current (or last) idle gap began
  ColdStartCounts counts;
};

// The keep-alive's terms for one idle replica of the serving tier.
struct KeepAliveTerms {
  double price_per_replica_hour = 0;  // the kept replica's
  absl::Duration lead;                // the tier's cold-start lead
  absl::Duration grace;               // the shortest keep-alive
  // What the replica a cold start brings up costs per hour, for the GPU
  // time its lead burns; 0: price_per_replica_hour. (An engine kept asleep
  // rents for less than the replica a cold start would start.)
  double cold_start_price_per_hour = 0;
};

struct KeepAlivePlan {
  absl::Duration keep_alive;
  absl::Duration break_even;                               // ski-rental T*
  double cold_start_cost_usd = 0;                          // B
  double idle_cost_per_hour = 0;                           // r
  absl::Duration prewarm_from = absl::InfiniteDuration();  // into the gap
  IdleHistogram::Windows windows;
  std::string cause;  // why keep_alive > break_even, when it is
  // Economics::budget_cost_per_day and the rest.
  double budget_cost_per_day = 0;
  double cold_fraction_at_break_even = 0;
  double cold_fraction_expected = 0;
  bool budget_capped = false;
};

class KeepAlivePricer {
 public:
  KeepAlivePricer() = default;
  KeepAlivePricer(const KeepAlivePricer& o)
      : price_(o.price_ ? std::make_unique<Price>(*o.price_) : nullptr) {}
  KeepAlivePricer& operator=(const KeepAlivePricer& o) {
    price_ = o.price_ ? std::make_unique<Price>(*o.price_) : nullptr;
    return *this;
  }
  KeepAlivePricer(KeepAlivePricer&&) = default;
  KeepAlivePricer& operator=(KeepAlivePricer&&) = default;
  ~KeepAlivePricer() = default;

  // The keep-alive for the current or next idle gap: the cost-optimal
  // min(histogram window, T*), the pre-warm when a gap is predicted, the
  // SLO's cause to keep longer, and what that costs a day.
  KeepAlivePlan Plan(const EndpointSpec& spec, const IdleEvidence& e,
                     const KeepAliveTerms& terms);

  size_t HeapBytes() const;

 private:
  // The budget's price at one keep-alive asked for, and its bound.
  struct Price {
    uint32_t version = UINT32_MAX;
    double gaps_per_day = -1;
    absl::Duration ski_keep;
    absl::Duration asked;
    std::optional<double> cap;
    absl::Duration lead;  // the pre-warm's, for the cold fractions
    absl::Duration keep;  // what the bound leaves of `asked`
    double cost_per_day = 0;
    double needs_per_day = 0;  // of `asked`
    double longer_than_ski = 0;
    double longer_than_keep = 0;  // P(gap not covered)
  };
  // Works the price out again when its inputs moved.
  void Reprice(Price& p, const IdleEvidence& e, const KeepAliveTerms& terms,
               absl::Duration ski_keep, absl::Duration asked,
               const std::optional<double>& cap, absl::Duration prewarm_from,
               absl::Duration warm_until) const;

  // On the heap once the endpoint has had an idle gap: a busy endpoint has
  // nothing to price and does not carry it.
  std::unique_ptr<Price> price_;
};

}  // namespace pilotlight::policy
