#include "controller/model/calibration.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/model/yaml_document.h"
#include "yaml-cpp/yaml.h"

namespace pilotlight::model {
namespace {

bool Positive(double v) { return std::isfinite(v) && v > 0; }

// 5400 -> "5,400".
std::string Thousands(double v) {
  const std::string digits = absl::StrFormat("%.0f", v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') {
      out.push_back(',');
    }
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace

void Calibrator::Update(Factor& f, double& log_sum, double log_ratio,
                        double weight, absl::Time at, absl::Time& last,
                        double min_weight) const {
  // Older evidence decays by half every half-life (a sample older than the
  // last one decays nothing: windows may arrive out of order).
  if (last != absl::InfinitePast() && at > last) {
    const double decay = std::exp2(-absl::ToDoubleSeconds(at - last) /
                                   absl::ToDoubleSeconds(options_.half_life));
    f.weight *= decay;
    log_sum *= decay;
  }
  last = std::max(last, at);
  f.weight += weight;
  log_sum += weight * log_ratio;
  f.raw = std::exp(log_sum / f.weight);
  if (f.weight >= min_weight) {
    f.state = CalibrationState::kCalibrated;
    f.scale = std::clamp(f.raw, options_.min_scale, options_.max_scale);
  } else {
    f.state = CalibrationState::kUncalibrated;
    f.scale = 1.0;
  }
}

absl::Status Calibrator::Add(const LatencySample& s,
                             const ReplicaModel& replica,
                             const Workload& workload) {
  // The decode and prefill halves stand alone: a nonsense TTFT does not
  // throw away a good inter-token figure, nor the other way round.
  std::vector<std::string> rejections;
  const double bound = std::log(options_.reject_ratio);
  if (!std::isfinite(s.itl_count) || s.itl_count < 0) {
    rejections.push_back("inter-token count is not finite and >= 0");
  } else if (s.itl_count > 0) {
    const int batch = std::max(1, static_cast<int>(std::lround(s.batch)));
    const double predicted = replica.TpotSeconds(batch, workload);
    if (!Positive(s.itl_s) || !Positive(s.batch)) {
      rejections.push_back(absl::StrFormat(
          "inter-token latency %g s at batch %g is not a positive figure",
          s.itl_s, s.batch));
    } else if (std::abs(std::log(s.itl_s / predicted)) > bound) {
      rejections.push_back(absl::StrFormat(
          "inter-token latency %.4g s at batch %d is %.3gx the model's %.4g s",
          s.itl_s, batch, s.itl_s / predicted, predicted));
    } else {
      Update(decode_, decode_log_sum_, std::log(s.itl_s / predicted),
             s.itl_count, s.at, decode_last_, options_.min_tokens);
    }
  }
  if (!std::isfinite(s.ttft_count) || s.ttft_count < 0) {
    rejections.push_back("first-token count is not finite and >= 0");
  } else if (s.ttft_count > 0 && s.waiting < 0.5) {
    const int prompt =
        std::max(1, static_cast<int>(std::lround(s.prompt_tokens)));
    const double predicted = replica.TtftSeconds(prompt);
    if (!Positive(s.ttft_s) || !Positive(s.prompt_tokens)) {
      rejections.push_back(absl::StrFormat(
          "time to first token %g s for %g-token prompts is not a positive "
          "figure",
          s.ttft_s, s.prompt_tokens));
    } else if (std::abs(std::log(s.ttft_s / predicted)) > bound) {
      rejections.push_back(absl::StrFormat(
          "time to first token %.4g s for %d-token prompts is %.3gx the "
          "model's %.4g s",
          s.ttft_s, prompt, s.ttft_s / predicted, predicted));
    } else {
      Update(prefill_, prefill_log_sum_, std::log(s.ttft_s / predicted),
             s.ttft_count, s.at, prefill_last_, options_.min_requests);
    }
  }
  if (rejections.empty()) {
    return absl::OkStatus();
  }
  ++rejected_;
  last_rejection_ = absl::StrJoin(rejections, "; ");
  return absl::InvalidArgumentError(last_rejection_);
}

void Calibrator::Apply(EngineTuning& t) const {
  t.decode_time_scale = decode_.scale;
  t.prefill_time_scale = prefill_.scale;
}

std::string Calibrator::Describe() const {
  auto one = [](const char* what, const Factor& f, double need,
                const char* unit) {
    if (f.state == CalibrationState::kCalibrated) {
      const bool clamped = f.scale != f.raw;
      return absl::StrFormat(
          "%s %.2fx predicted (%s %s%s)", what, f.scale, Thousands(f.weight),
          unit, clamped ? absl::StrFormat(", clamped from %.2fx", f.raw) : "");
    }
    return absl::StrFormat("%s uncalibrated (%s of %s %s)", what,
                           Thousands(f.weight), Thousands(need), unit);
  };
  std::string out =
      absl::StrCat(one("decode", decode_, options_.min_tokens, "tokens"), "; ",
                   one("prefill", prefill_, options_.min_requests, "requests"));
  if (rejected_ > 0) {
    absl::StrAppend(&out, "; ", rejected_,
                    " samples rejected, last: ", last_rejection_);
  }
  return out;
}

absl::StatusOr<std::vector<SavedCalibration>> ParseCalibration(
    absl::string_view yaml, absl::string_view origin) {
  absl::StatusOr<YAML::Node> doc = LoadYamlDocument(yaml, origin);
  if (!doc.ok()) {
    return doc.status();
  }
  const YAML::Node root = *doc;
  if (!root.IsMap() || !root["calibrations"] ||
      !root["calibrations"].IsSequence()) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": expected a SizingCalibration with a \"calibrations\" list"));
  }
  std::vector<SavedCalibration> out;
  const YAML::Node list = root["calibrations"];
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = absl::StrCat(origin, ": calibrations[", i, "]");
    const YAML::Node n = list[i];
    try {
      SavedCalibration c;
      if (!n.IsMap() || !n["model"] || !n["gpuClass"]) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": needs \"model\" and \"gpuClass\""));
      }
      c.model = n["model"].as<std::string>();
      c.gpu_class = n["gpuClass"].as<std::string>();
      if (n["decodeScale"]) {
        c.decode_scale = n["decodeScale"].as<double>();
      }
      if (n["prefillScale"]) {
        c.prefill_scale = n["prefillScale"].as<double>();
      }
      for (const double v : {c.decode_scale, c.prefill_scale}) {
        if (!Positive(v) || v > 100) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ": scale ", v, " is out of range (> 0 and <= 100)"));
        }
      }
      out.push_back(std::move(c));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": malformed entry: ", e.what()));
    }
  }
  return out;
}

}  // namespace pilotlight::model
