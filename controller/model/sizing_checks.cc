// The ranges a sizing request and the engine's terms must keep, checked
// before anything is sized (declared in sizing.h).
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/model/sizing.h"

namespace pilotlight::model {
namespace {

absl::Status OutOfRange(absl::string_view field, double value,
                        absl::string_view allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " = ", value, " is out of range (", allowed, ")"));
}

}  // namespace

absl::Status ValidateSizingRequest(const SizingRequest& r) {
  if (absl::Status s = ValidateProfile(r.model); !s.ok()) {
    return s;
  }
  const Workload& w = r.workload;
  if (w.context_tokens < 1 || w.context_tokens > r.model.max_context_tokens) {
    return OutOfRange("context_tokens", w.context_tokens,
                      absl::StrCat("1..", r.model.max_context_tokens, ", ",
                                   r.model.name, "'s maximum context"));
  }
  if (w.prompt_tokens < 1 || w.prompt_tokens >= w.context_tokens) {
    return OutOfRange(
        "prompt_tokens", w.prompt_tokens,
        absl::StrCat("1..", w.context_tokens - 1, ", below context_tokens"));
  }
  if (w.output_tokens < 1 ||
      w.output_tokens > w.context_tokens - w.prompt_tokens) {
    return OutOfRange(
        "output_tokens", w.output_tokens,
        absl::StrCat("1..", w.context_tokens - w.prompt_tokens,
                     ", so that prompt + output fit in context_tokens = ",
                     w.context_tokens));
  }
  if (w.concurrency < 1 || w.concurrency > 1'000'000) {
    return OutOfRange("concurrency", w.concurrency, "1..1000000");
  }
  if (r.slo.ttft <= absl::ZeroDuration() || r.slo.ttft > absl::Hours(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("slo.ttft = ", absl::FormatDuration(r.slo.ttft),
                     " is out of range (> 0 and <= 1h)"));
  }
  if (r.slo.tpot <= absl::ZeroDuration() || r.slo.tpot > absl::Minutes(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("slo.tpot = ", absl::FormatDuration(r.slo.tpot),
                     " is out of range (> 0 and <= 1m)"));
  }
  return ValidateTuning(r.tuning);
}

absl::Status ValidateTuning(const EngineTuning& t) {
  struct Fraction {
    const char* field;
    double value;
  };
  const Fraction fractions[] = {
      {"tuning.memory_bandwidth_utilization", t.memory_bandwidth_utilization},
      {"tuning.weight_read_efficiency_8bit", t.weight_read_efficiency_8bit},
      {"tuning.weight_read_efficiency_4bit", t.weight_read_efficiency_4bit},
      {"tuning.moe_expert_read_efficiency", t.moe_expert_read_efficiency},
      {"tuning.model_flops_utilization", t.model_flops_utilization},
      {"tuning.model_flops_utilization_8bit", t.model_flops_utilization_8bit},
      {"tuning.model_flops_utilization_fp4", t.model_flops_utilization_fp4},
      {"tuning.gpu_memory_utilization", t.gpu_memory_utilization},
  };
  for (const Fraction& f : fractions) {
    if (!std::isfinite(f.value) || f.value <= 0 || f.value > 1) {
      return OutOfRange(f.field, f.value, "> 0 and <= 1");
    }
  }
  if (!std::isfinite(t.runtime_overhead_gib) || t.runtime_overhead_gib < 0 ||
      t.runtime_overhead_gib > 1000) {
    return OutOfRange("tuning.runtime_overhead_gib", t.runtime_overhead_gib,
                      "0..1000");
  }
  if (t.max_batch < 1 || t.max_batch > 1'000'000) {
    return OutOfRange("tuning.max_batch", t.max_batch, "1..1000000");
  }
  if (!std::isfinite(t.roofline_overlap) || t.roofline_overlap < 0 ||
      t.roofline_overlap > 1) {
    return OutOfRange("tuning.roofline_overlap", t.roofline_overlap, "0..1");
  }
  for (const double scale : {t.decode_time_scale, t.prefill_time_scale}) {
    if (!std::isfinite(scale) || scale <= 0 || scale > 100) {
      return OutOfRange("tuning calibration scale", scale, "> 0 and <= 100");
    }
  }
  if (t.int4_group_size < 1 || t.int4_group_size > 1'000'000) {
    return OutOfRange("tuning.int4_group_size", t.int4_group_size,
                      "1..1000000");
  }
  if (t.step_overhead < absl::ZeroDuration() ||
      t.step_overhead > absl::Seconds(1) ||
      t.request_overhead < absl::ZeroDuration() ||
      t.request_overhead > absl::Seconds(10)) {
    return absl::InvalidArgumentError(
        "tuning.step_overhead must be 0..1s and tuning.request_overhead "
        "0..10s");
  }
  if (t.allreduce_latency_nvlink < absl::ZeroDuration() ||
      t.allreduce_latency_pcie < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("all-reduce latencies must be >= 0");
  }
  return absl::OkStatus();
}

}  // namespace pilotlight::model
