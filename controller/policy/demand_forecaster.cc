#include "controller/policy/demand_forecaster.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_format.h"
#include "controller/base/ceil_div.h"

namespace pilotlight::policy {
namespace {

// A trend counts only when a line explains the window well (a ramp, not a
// step -- panic handles steps -- nor noise) and the window is mostly
// observed.
void RaiseByTrend(const DemandLearner& demand, double recent,
                  const ForecastContext& ctx, absl::Time now,
                  const DeciderConfig& config, DemandForecast& f) {
  const std::optional<TimeBuckets::Fit> fit =
      demand.concurrency().Slope(now, config.trend_window);
  if (fit && fit->slope > 0 && fit->r2 >= config.trend_min_r2 &&
      fit->buckets * absl::Seconds(1) * 2 >= config.trend_window) {
    const double trend = recent + fit->slope * absl::ToDoubleSeconds(ctx.lead);
    if (trend > f.forecast) {
      f.forecast = trend;
      f.note = absl::StrFormat("trend +%.2f/s, R2 %.2f", fit->slope, fit->r2);
    }
  }
}

// With no replica ready nothing is in flight and the held queue counts
// S / L, so an endpoint at a steady stream started from zero would grow by
// a few replicas a tick while its hold overflowed. What the replicas asked
// for now meet when they are ready is the offered load: Little's law, the
// arrival rate times the service time at the batch they run (their
// capacity at the TPOT SLO). The rate is over the whole time at zero so
// far, at Poisson's one-sigma lower bound (n - sqrt n) / t, so a few
// requests at zero ask for no more than before. A floor on the forecast,
// not a demand sample: the held queue's ramp still feeds the trend.
void RaiseByOfferedLoad(const DemandLearner& demand, const ForecastContext& ctx,
                        const DeciderConfig& config, DemandForecast& f) {
  const std::optional<absl::Time> last = demand.last_sample_at();
  if (ctx.ready != 0 || !last || *last <= demand.at_zero_since()) {
    return;
  }
  const double n = demand.at_zero_arrivals();
  const double seconds = absl::ToDoubleSeconds(
      std::max(*last - demand.at_zero_since(), config.offered_load_min_window));
  const double offered = (n - std::sqrt(n)) / seconds * ctx.loaded_service_s;
  if (offered > f.forecast) {
    f.forecast = offered;
    f.note =
        absl::StrFormat("offered load at zero %.1f (%.0f requests in %.0f s)",
                        offered, n, seconds);
  }
}

}  // namespace

DemandForecast DemandForecaster::Forecast(const DemandLearner& demand,
                                          const ForecastContext& ctx,
                                          absl::Time now,
                                          const DeciderConfig& config) {
  DemandForecast f;
  f.stable =
      demand.concurrency().Average(now, config.stable_window).value_or(0);
  const double recent = demand.concurrency()
                            .Average(now, config.panic_window)
                            .value_or(demand.last_concurrency());
  f.recent = recent;
  UpdatePanic(recent, ctx, now, config);
  f.base = panic_ ? std::max(f.stable, recent) : f.stable;
  f.forecast = f.base;
  f.reason = panic_ ? ScaleReason::kPanic : ScaleReason::kSteady;
  RaiseByTrend(demand, recent, ctx, now, config, f);
  RaiseByOfferedLoad(demand, ctx, config, f);
  if (const std::optional<double> ratio = demand.season().Ratio(now, ctx.lead);
      ratio && *ratio > 1) {
    const double seasonal = f.base * std::min(*ratio, 4.0);
    if (seasonal > f.forecast) {
      f.forecast = seasonal;
      f.note = absl::StrFormat("time of day x%.2f", *ratio);
    }
  }
  return f;
}

void DemandForecaster::UpdatePanic(double recent, const ForecastContext& ctx,
                                   absl::Time now,
                                   const DeciderConfig& config) {
  if (panic_ && now >= panic_until_) {
    panic_ = false;
  }
  if (ctx.ready > 0 && ctx.capacity > 0 &&
      CeilDiv(recent, ctx.capacity) >= config.panic_threshold * ctx.ready) {
    panic_ = true;
    panic_until_ = now + config.stable_window;
  }
}

}  // namespace pilotlight::policy
