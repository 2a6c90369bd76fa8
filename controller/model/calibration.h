// Online calibration of the sizing model: per (model, GPU class), bounded
// correction factors -- observed / predicted decode step time and prefill
// time -- learned from the serving engine's own latency histograms (vLLM's
// inter-token latency and time to first token, with its running batch).
// Pure code: the caller turns scrapes into LatencySample windows and passes
// explicit times; nothing here reads a clock or a socket.
//
// Rules:
//   - one sample is one window: mean inter-token latency over `itl_count`
//     tokens at mean batch `batch`, and mean TTFT over `ttft_count` requests
//     of mean prompt `prompt_tokens` (taken only when nothing waited, since
//     vLLM's TTFT includes the queue);
//   - a sample's log ratio ln(observed / predicted) enters a weighted mean,
//     weighted by its count, older weight decaying with `half_life`;
//   - nonsense is rejected, not averaged: a non-finite or non-positive
//     figure, or a ratio outside [1/reject_ratio, reject_ratio];
//   - the factor is used once `min_tokens` (decode) or `min_requests`
//     (prefill) of weight are held, clamped to [min_scale, max_scale];
//     before that the uncalibrated model stands, and the status says why.
//
// Example:
//   Calibrator c(CalibrationOptions{});
//   c.Add(sample, replica, workload);
//   EngineTuning t = tuning;
//   c.Apply(t);   // decode_time_scale / prefill_time_scale
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/model/sizing.h"

namespace pilotlight::model {

struct CalibrationOptions {
  double min_tokens = 2000;  // decode tokens before the factor is used
  double min_requests = 50;  // first tokens before the prefill factor is
  absl::Duration half_life = absl::Minutes(30);
  double min_scale = 0.5;  // the factor is clamped to this range
  double max_scale = 2.0;
  double reject_ratio = 10.0;  // |observed / predicted| beyond: nonsense
};

// One observation window of one variant's pods.
struct LatencySample {
  absl::Time at;
  double itl_s = 0;      // mean inter-token latency
  double itl_count = 0;  // tokens behind it
  double batch = 0;      // mean sequences running
  double ttft_s = 0;     // mean time to first token
  double ttft_count = 0;
  double prompt_tokens = 0;  // mean prompt length
  double waiting = 0;        // mean requests queued
};

enum class CalibrationState {
  kUncalibrated,  // not enough samples yet: the model as predicted
  kCalibrated,    // the factor is in use
};

// One factor and how it stands.
struct Factor {
  double scale = 1.0;  // observed / predicted, in use (1 when uncalibrated)
  double raw = 1.0;    // the unclamped estimate
  double weight = 0;   // decayed tokens (decode) or requests (prefill)
  CalibrationState state = CalibrationState::kUncalibrated;
};

class Calibrator {
 public:
  explicit Calibrator(CalibrationOptions options = {}) : options_(options) {}

  // Adds one window, predicted with `replica` for `workload`'s shape at the
  // sample's batch. Its decode and prefill halves stand alone: a nonsense
  // half is refused (InvalidArgument, the message says which figure) and
  // moves nothing, the other half still counts.
  absl::Status Add(const LatencySample& s, const ReplicaModel& replica,
                   const Workload& workload);

  const Factor& decode() const { return decode_; }
  const Factor& prefill() const { return prefill_; }
  // The last rejection, "" when none.
  const std::string& last_rejection() const { return last_rejection_; }
  int rejected() const { return rejected_; }

  // Sets `t`'s decode_time_scale and prefill_time_scale to the factors in
  // use.
  void Apply(EngineTuning& t) const;

  // One line for a status condition: "decode 1.32x predicted (5,400
  // tokens); prefill uncalibrated (12 of 50 requests)".
  std::string Describe() const;

 private:
  // Folds one accepted log ratio of `weight` into `f` (decaying what it
  // held since `last`).
  void Update(Factor& f, double& log_sum, double log_ratio, double weight,
              absl::Time at, absl::Time& last, double min_weight) const;

  CalibrationOptions options_;
  Factor decode_;
  Factor prefill_;
  double decode_log_sum_ = 0;  // decayed sum of weight x log ratio
  double prefill_log_sum_ = 0;
  absl::Time decode_last_ = absl::InfinitePast();
  absl::Time prefill_last_ = absl::InfinitePast();
  std::string last_rejection_;
  int rejected_ = 0;
};

// A saved calibration (SavedCalibration, sizing.h), as `pilotlight size
// --calibration FILE` reads it:
//   kind: SizingCalibration
//   calibrations:
//   - {model: llama-3.1-8b, gpuClass: a100-80gb, decodeScale: 1.25,
//      prefillScale: 1.1}
// Parses the YAML above; factors must lie in (0, 100]. Errors name the
// origin and the entry.
absl::StatusOr<std::vector<SavedCalibration>> ParseCalibration(
    absl::string_view yaml, absl::string_view origin);

}  // namespace pilotlight::model
