// KpaDecider: Knative Serving's KPA decider (pkg/autoscaler/scaling/
// autoscaler.go, knative/serving @ 98e5ef90), ported rule for rule so the
// `knative` baseline is Knative, not an impression of it. It is held
// against Knative's own unit-test cases (transcribed as data in
// tests/policy/testdata/knative-cases.json; tests/policy/knative_kpa_test.cc).
//
// Scale(now, stable, panic, ready):
//   readyPods = max(1, ready); maxUp = ceil(maxScaleUpRate x readyPods);
//   maxDown = reachable ? floor(readyPods / maxScaleDownRate) : 0
//   dspc = ceil(stable / target), dppc = ceil(panic / target), each clamped
//   to [maxDown, maxUp]; activation scale raises a non-zero count.
//   Panic starts (or extends) when dppc / readyPods >= panicThreshold and
//   ends once a stable window has passed without it; while panicking the
//   count is max(stable, panic) and never falls (maxPanicPods).
//   With a scale-down delay and a reachable revision, the count is the
//   maximum of the last delay (2 s buckets).
//   Excess burst capacity = floor(ready x totalValue - TBC - panic)
//   (0 when TBC = 0, -1 when TBC = -1).
#pragma once

#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "controller/policy/time_window.h"

namespace pilotlight::policy {

struct KpaSpec {
  double target_value = 70;  // per pod (concurrency or RPS)
  double total_value = 100;  // per pod, for the burst capacity
  double target_burst_capacity = 211;
  double panic_threshold = 2.0;  // ratio (200 %)
  double max_scale_up_rate = 1000;
  double max_scale_down_rate = 2;
  absl::Duration stable_window = absl::Seconds(60);
  absl::Duration scale_down_delay;
  bool reachable = true;
  int32_t activation_scale = 1;
};

struct KpaResult {
  int32_t desired = 0;
  int32_t excess_burst_capacity = 0;
  bool valid = false;
};

class KpaDecider {
 public:
  // As newAutoscaler: above one pod it starts panicking at `now`, keeping
  // the current scale until it has data.
  KpaDecider(const KpaSpec& spec, int32_t initial_scale, absl::Time now);

  void Update(const KpaSpec& spec) { spec_ = spec; }
  // `stable`/`panic` nullopt: the metric had no data (invalid result).
  // `ready` nullopt: the endpoints were not found (treated as 0).
  KpaResult Scale(absl::Time now, std::optional<double> stable,
                  std::optional<double> panic, std::optional<int32_t> ready);

  std::optional<absl::Time> panic_time() const { return panic_time_; }
  // The test hook of the Go tests (prepFunc).
  void SetPanicForTest(std::optional<absl::Time> t, int32_t max_panic_pods) {
    panic_time_ = t;
    max_panic_pods_ = max_panic_pods;
  }

 private:
  KpaSpec spec_;
  std::optional<absl::Time> panic_time_;
  int32_t max_panic_pods_ = 0;
  std::optional<policy::WindowedMax> delay_window_;
};

// KpaScaler: the KPA reconciler's scale step (pkg/reconciler/autoscaling/
// kpa/scaler.go, scale() and handleScaleToZero()), which turns the
// decider's desired count into a replica patch: negative = no metrics yet;
// min/max bounds (min ignored for an unreachable revision); the initial
// scale until it has been reached once; and scale to zero only when
//   - scale to zero is enabled, and
//   - the PA has been Active for a stable window (then it is marked
//     Inactive without scaling), or
//   - the PA is Inactive and the activator has been in the path (probe ok,
//     or TBC = -1) for max(grace period, last-pod retention) -- or the SKS
//     has been in proxy mode for the grace period and the retention has
//     passed; or
//   - activation has failed (Active=Unknown past progress deadline + 10 s).
struct KpaScalerConfig {
  bool enable_scale_to_zero = true;
  absl::Duration stable_window = absl::Seconds(60);
  absl::Duration grace_period = absl::Seconds(30);
  absl::Duration last_pod_retention;  // scale-to-zero-pod-retention-period
  absl::Duration progress_deadline = absl::Seconds(600);
  double target_burst_capacity = 211;
  int32_t min_scale = 0;
  int32_t max_scale = 0;  // 0 = unbounded
  int32_t initial_scale = 1;
  bool reachable = true;
};

enum class PaActive { kTrue, kFalse, kUnknown };

struct PaStatus {
  PaActive active = PaActive::kUnknown;
  absl::Duration active_for;  // since the Active condition last changed
  bool scale_target_initialized = false;
};

struct KpaScaleResult {
  int32_t replicas = -1;  // the scale decided (-1 = unknown)
  bool patch = false;     // a replica patch is sent (the count changes)
};

// `sks_proxy_for`: how long the activator has been in the path (nullopt =
// not yet); `probe_ok`: the activator probe answered.
KpaScaleResult KpaScale(const KpaScalerConfig& c, const PaStatus& pa,
                        int32_t current_replicas, int32_t desired,
                        std::optional<absl::Duration> sks_proxy_for,
                        bool probe_ok);

}  // namespace pilotlight::policy
