// DemandForecaster: the demand one cold-start lead ahead -- the stable
// window's (the panic window's while panicking), raised by a rising trend,
// by the offered load while no replica is ready, and by the time-of-day
// profile -- and the panic mode that decides which window counts.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "controller/policy/decider_config.h"
#include "controller/policy/decision.h"
#include "controller/policy/demand_learner.h"

namespace pilotlight::policy {

// What the serving tier says about the forecast.
struct ForecastContext {
  int ready = 0;                // replicas ready now, every variant
  double capacity = 0;          // per replica at the target utilisation
  absl::Duration lead;          // its cold-start lead
  double loaded_service_s = 0;  // a request's service time at capacity
};

struct DemandForecast {
  double stable = 0;    // stable-window concurrency
  double base = 0;      // stable, or the panic window's while panicking
  double recent = 0;    // the panic window's concurrency
  double forecast = 0;  // one cold-start lead ahead
  ScaleReason reason = ScaleReason::kSteady;  // kPanic while panicking
  std::string note;  // what raised the forecast above `base`, if anything
};

class DemandForecaster {
 public:
  DemandForecast Forecast(const DemandLearner& demand,
                          const ForecastContext& ctx, absl::Time now,
                          const DeciderConfig& config);
  bool panic() const { return panic_; }

 private:
  // Panic starts when the panic window's demand needs `panic_threshold`
  // times the ready replicas, and ends a stable window after it last did.
  void UpdatePanic(double recent, const ForecastContext& ctx, absl::Time now,
                   const DeciderConfig& config);

  bool panic_ = false;
  absl::Time panic_until_;
};

}  // namespace pilotlight::policy
