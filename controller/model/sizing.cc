#include "controller/model/sizing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/model/cold_start.h"
#include "controller/model/sleep.h"

namespace pilotlight::model {
namespace {

constexpr int kTensorParallelDegrees[] = {1, 2, 4, 8};

std::string Gib(double bytes) { return absl::StrFormat("%.1f", bytes / kGiB); }

}  // namespace

absl::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kRecommended:
      return "recommended";
    case Verdict::kMeetsSlo:
      return "meets SLO";
    case Verdict::kMissesSlo:
      return "misses SLO";
    case Verdict::kDoesNotFit:
      return "does not fit";
    case Verdict::kUnsupported:
      return "unsupported";
  }
  return "unsupported";
}

double WeightBytes(const ModelProfile& m, Precision p, int int4_group_size) {
  const double bytes = WeightBytesPerParam(p, int4_group_size);
  if (bytes >= 2.0) {
    return m.params * bytes;
  }
  // Quantised checkpoints (AWQ, GPTQ, FP8 and NVFP4 from ModelOpt or
  // llm-compressor) keep the output projection at 16 bits: vocab x hidden.
  const double head =
      std::min(m.params, static_cast<double>(m.vocab_size) * m.hidden_size);
  return (m.params - head) * bytes + head * 2.0;
}

namespace {

double WeightReadEfficiency(Precision p, const EngineTuning& t) {
  switch (p) {
    case Precision::kBf16:
    case Precision::kFp16:
      return 1.0;
    case Precision::kFp8:
    case Precision::kInt8:
      return t.weight_read_efficiency_8bit;
    case Precision::kInt4:
    case Precision::kFp4:
      return t.weight_read_efficiency_4bit;
  }
  return 1.0;
}

double PrefillMfu(Precision p, const EngineTuning& t) {
  switch (p) {
    case Precision::kBf16:
    case Precision::kFp16:
    case Precision::kInt4:  // weight-only: the math runs at 16 bits
      return t.model_flops_utilization;
    case Precision::kFp8:
    case Precision::kInt8:
      return t.model_flops_utilization_8bit;
    case Precision::kFp4:
      return t.model_flops_utilization_fp4;
  }
  return t.model_flops_utilization;
}

// Experts a batch of n tokens touches per layer, in expectation: each token
// routes to k of E, so E x (1 - (1 - k/E)^n) distinct experts.
double ExpertsTouched(int experts, int per_token, double tokens) {
  const double e = experts;
  const double miss = 1.0 - per_token / e;
  return e * (1.0 - std::pow(miss, std::max(tokens, 1.0)));
}

}  // namespace

double KvBytesPerToken(const ModelProfile& m, Precision kv) {
  return 2.0 * m.layers * m.kv_heads * m.head_dim * BytesPerElement(kv);
}

// --- ReplicaModel -----------------------------------------------------------

ReplicaModel::ReplicaModel(const ModelProfile& model, const GpuClass& gpu,
                           int tp, Precision weights, Precision kv,
                           const EngineTuning& tuning)
    : tp_(tp),
      layers_(model.layers),
      max_batch_(tuning.max_batch),
      heads_split_evenly_(model.attention_heads % tp == 0),
      weight_bytes_(WeightBytes(model, weights, tuning.int4_group_size)),
      shared_weight_bytes_(weight_bytes_),
      expert_bytes_(0),
      moe_expert_read_efficiency_(tuning.moe_expert_read_efficiency),
      experts_(model.experts),
      experts_per_token_(model.experts_per_token),
      active_params_(model.active_params),
      hidden_(model.hidden_size),
      attn_flop_coeff_(2.0 * model.layers * model.attention_heads *
                       model.head_dim),
      kv_bytes_per_token_gpu_(0),
      usable_bytes_per_gpu_(gpu.memory_gib * kGiB *
                                tuning.gpu_memory_utilization -
                            tuning.runtime_overhead_gib * kGiB),
      bandwidth_bytes_per_s_(gpu.bandwidth_gbps * 1e9 *
                             tuning.memory_bandwidth_utilization),
      weight_read_efficiency_(WeightReadEfficiency(weights, tuning)),
      flops_per_s_(gpu.ComputeTflops(weights) * 1e12 * tp *
                   PrefillMfu(weights, tuning)),
      link_bytes_per_s_(gpu.interconnect_gbps * 1e9),
      allreduce_latency_s_(
          std::log2(static_cast<double>(tp)) *
          absl::ToDoubleSeconds(gpu.interconnect == InterconnectKind::kPcie
                                    ? tuning.allreduce_latency_pcie
                                    : tuning.allreduce_latency_nvlink)),
      overlap_(tuning.roofline_overlap),
      step_overhead_s_(absl::ToDoubleSeconds(tuning.step_overhead)),
      request_overhead_s_(absl::ToDoubleSeconds(tuning.request_overhead)),
      decode_time_scale_(tuning.decode_time_scale),
      prefill_time_scale_(tuning.prefill_time_scale) {
  if (model.is_moe()) {
    // total = shared + E x expert, active = shared + k x expert.
    const double bytes = WeightBytesPerParam(weights, tuning.int4_group_size);
    const double expert_params = (model.params - model.active_params) /
                                 (model.experts - model.experts_per_token);
    expert_bytes_ = expert_params * bytes;
    shared_weight_bytes_ = weight_bytes_ - model.experts * expert_bytes_;
  }
  // KV heads are split across TP ranks; with more ranks than heads each rank
  // keeps a replica of one head (vLLM's behaviour).
  const int kv_heads_per_gpu = (model.kv_heads + tp - 1) / tp;
  kv_bytes_per_token_gpu_ = 2.0 * model.layers * kv_heads_per_gpu *
                            model.head_dim * BytesPerElement(kv);
}

double ReplicaModel::kv_capacity_tokens() const {
  return (usable_bytes_per_gpu_ - weight_bytes_per_gpu()) /
         kv_bytes_per_token_gpu_;
}

double ReplicaModel::ShortfallBytesPerGpu(int context_tokens) const {
  const double need =
      weight_bytes_per_gpu() + context_tokens * kv_bytes_per_token_gpu_;
  return std::max(0.0, need - usable_bytes_per_gpu_);
}

int ReplicaModel::KvSequences(int context_tokens) const {
  const double seqs = std::floor(kv_capacity_tokens() / context_tokens);
  if (seqs <= 0) {
    return 0;
  }
  return seqs >= 1e9 ? 1'000'000'000 : static_cast<int>(seqs);
}

double ReplicaModel::WeightBytesReadDenseEquivalent(double tokens) const {
  if (experts_ == 0) {
    return weight_bytes_;
  }
  return shared_weight_bytes_ +
         ExpertsTouched(experts_, experts_per_token_, tokens) * expert_bytes_ /
             moe_expert_read_efficiency_;
}

double ReplicaModel::AllReduceSeconds(double tokens) const {
  if (tp_ == 1) {
    return 0.0;
  }
  // Ring all-reduce of a 16-bit activation tensor of tokens x hidden.
  const double bytes = tokens * hidden_ * 2.0;
  return allreduce_latency_s_ +
         2.0 * (tp_ - 1) / tp_ * bytes / link_bytes_per_s_;
}

double ReplicaModel::StepSeconds(double decode_batch, double mean_kv_tokens,
                                 double prefill_tokens,
                                 double prompt_tokens) const {
  const double tokens = decode_batch + prefill_tokens;
  const double memory_s =
      WeightBytesReadDenseEquivalent(tokens) / tp_ /
          (bandwidth_bytes_per_s_ * weight_read_efficiency_) +
      decode_batch * mean_kv_tokens * kv_bytes_per_token_gpu_ /
          bandwidth_bytes_per_s_;
  // Linear layers: 2 FLOPs per active parameter per token. Attention: a
  // decode token attends to its mean_kv_tokens keys (QK^T and AV: 4 x
  // layers x q_dim FLOPs per key); a prefilled token attends on average to
  // half its prompt (causal).
  const double flops = 2.0 * active_params_ * tokens +
                       2.0 * attn_flop_coeff_ * mean_kv_tokens * decode_batch +
                       attn_flop_coeff_ * prompt_tokens * prefill_tokens;
  const double compute_s = flops / flops_per_s_;
  // Memory and compute overlap in part: the longer, plus what of the
  // shorter does not hide under it.
  const double busy_s = std::max(memory_s, compute_s) +
                        (1.0 - overlap_) * std::min(memory_s, compute_s);
  // Two all-reduces per layer (after attention and after the MLP).
  const double step =
      busy_s + step_overhead_s_ + 2.0 * layers_ * AllReduceSeconds(tokens);
  // Calibration: a step that decodes is a decode step; a prefill alone is a
  // prefill.
  return step * (decode_batch > 0 ? decode_time_scale_ : prefill_time_scale_);
}

double ReplicaModel::TtftSeconds(int prompt_tokens) const {
  // The whole prompt in one step, with nothing decoding beside it.
  return StepSeconds(0, 0, prompt_tokens, prompt_tokens) + request_overhead_s_;
}

double ReplicaModel::StaticBatchSeconds(int batch, int prompt_tokens,
                                        int output_tokens) const {
  // One prefill of every prompt (its first token included), then
  // output_tokens - 1 decode steps of the whole batch at the mean KV length.
  const double prefill = StepSeconds(
      0, 0, static_cast<double>(batch) * prompt_tokens, prompt_tokens);
  const double mean_kv = prompt_tokens + output_tokens / 2.0;
  return prefill + (output_tokens - 1) * StepSeconds(batch, mean_kv, 0, 0);
}

double ReplicaModel::TpotSeconds(int batch, const Workload& w) const {
  const double mean_kv = std::min<double>(
      w.prompt_tokens + w.output_tokens / 2.0, w.context_tokens);
  // Each of the other batch - 1 sequences finishes once every output_tokens
  // steps and its successor's prompt is prefilled within the running batch.
  const double prefill_per_step =
      (batch - 1.0) / w.output_tokens * w.prompt_tokens;
  return StepSeconds(batch, mean_kv, prefill_per_step, w.prompt_tokens);
}

int ReplicaModel::MaxConcurrency(const Workload& w, double tpot_slo_s) const {
  if (!precision_supported() || !heads_split_evenly_) {
    return 0;
  }
  const int cap = std::min(max_batch_, KvSequences(w.context_tokens));
  if (cap < 1 || TpotSeconds(1, w) > tpot_slo_s) {
    return 0;
  }
  // TPOT is non-decreasing in the batch: binary search the last b that meets.
  int lo = 1;
  int hi = cap;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (TpotSeconds(mid, w) <= tpot_slo_s) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// --- Size -------------------------------------------------------------------

namespace {

// Why a replica that fits misses the request, if it does: the KV cache or
// the engine's batch too small, TPOT or TTFT over the SLO.
std::vector<std::string> Misses(const SizingRequest& r,
                                const ReplicaModel& replica,
                                const SizingOption& o, int at, int cap,
                                double tpot_slo_s, double ttft_slo_s) {
  const Workload& w = r.workload;
  std::vector<std::string> misses;
  if (w.concurrency > o.kv_sequences) {
    misses.push_back(absl::StrCat("KV cache holds ", o.kv_sequences,
                                  " sequences of ", w.context_tokens,
                                  " tokens, need ", w.concurrency));
  } else if (w.concurrency > r.tuning.max_batch) {
    misses.push_back(absl::StrCat("needs ", w.concurrency,
                                  " concurrent, the engine batches at most ",
                                  r.tuning.max_batch));
  }
  if (o.tpot_s > tpot_slo_s) {
    misses.push_back(
        o.max_concurrency == 0
            ? absl::StrFormat("TPOT %.3f s > %.3f s even at 1 concurrent",
                              replica.TpotSeconds(1, w), tpot_slo_s)
            : absl::StrFormat("TPOT %.3f s > %.3f s at %d concurrent "
                              "(SLO holds up to %d)",
                              o.tpot_s, tpot_slo_s, at, o.max_concurrency));
  } else if (at < w.concurrency && o.max_concurrency < w.concurrency &&
             o.max_concurrency < cap) {
    misses.push_back(absl::StrFormat("TPOT SLO holds up to %d concurrent",
                                     o.max_concurrency));
  }
  if (o.ttft_s > ttft_slo_s) {
    misses.push_back(
        absl::StrFormat("TTFT %.2f s > %.2f s for a %d-token "
                        "prompt",
                        o.ttft_s, ttft_slo_s, w.prompt_tokens));
  }
  return misses;
}

SizingOption Evaluate(const SizingRequest& r, const GpuClass& gpu, int tp) {
  SizingOption o;
  o.gpu_class = gpu.name;
  o.tensor_parallel = tp;
  o.price_per_hour = tp * gpu.price_on_demand_per_gpu_hour;

  if (!gpu.SupportsWeights(r.weights)) {
    o.verdict = Verdict::kUnsupported;
    o.reason =
        r.weights == Precision::kBf16
            ? absl::StrCat(gpu.gpu_model, " has no bf16; use fp16 weights")
            : absl::StrCat(PrecisionName(r.weights), " weights need ",
                           PrecisionName(r.weights), " tensor cores; ",
                           gpu.gpu_model, " has none");
    return o;
  }
  if (r.model.attention_heads % tp != 0) {
    o.verdict = Verdict::kUnsupported;
    o.reason = absl::StrCat(r.model.attention_heads,
                            " attention heads do not split over TP ", tp);
    return o;
  }

  EngineTuning tuning = r.tuning;
  for (const SavedCalibration& c : r.calibrations) {
    if (c.gpu_class == gpu.name && c.model == r.model.name) {
      tuning.decode_time_scale = c.decode_scale;
      tuning.prefill_time_scale = c.prefill_scale;
      o.calibrated = true;
    }
  }
  const ReplicaModel replica(r.model, gpu, tp, r.weights, r.kv, tuning);
  const Workload& w = r.workload;
  const double shortfall = replica.ShortfallBytesPerGpu(w.context_tokens);
  if (shortfall > 0) {
    o.verdict = Verdict::kDoesNotFit;
    o.shortfall_gib = shortfall / kGiB;
    const double kv_one =
        w.context_tokens * replica.kv_bytes_per_token_per_gpu();
    o.reason = absl::StrCat(
        "needs ", Gib(replica.weight_bytes_per_gpu() + kv_one),
        " GiB per GPU (weights ", Gib(replica.weight_bytes_per_gpu()),
        " + KV for one ", w.context_tokens, "-token sequence ", Gib(kv_one),
        "), has ", Gib(replica.usable_bytes_per_gpu()), " usable");
    return o;
  }

  o.fits = true;
  o.cold_start_s = absl::ToDoubleSeconds(
      EstimateColdStart(replica.weight_bytes_per_gpu(), gpu, {}).total());
  const SleepEstimate sleep =
      EstimateSleep(replica.weight_bytes_per_gpu(), tp, gpu, {});
  o.wake_s = absl::ToDoubleSeconds(sleep.wake);
  o.sleeping_per_gpu = sleep.engines_per_gpu;
  o.asleep_price_per_hour = sleep.asleep_price_per_hour;
  o.kv_sequences = replica.KvSequences(w.context_tokens);
  const double tpot_slo_s = absl::ToDoubleSeconds(r.slo.tpot);
  const double ttft_slo_s = absl::ToDoubleSeconds(r.slo.ttft);
  const int cap = std::min(r.tuning.max_batch, o.kv_sequences);
  const int at = std::min(w.concurrency, cap);
  o.ttft_s = replica.TtftSeconds(w.prompt_tokens);
  o.tpot_s = replica.TpotSeconds(at, w);
  o.max_concurrency = replica.MaxConcurrency(w, tpot_slo_s);
  if (o.max_concurrency > 0) {
    o.decode_tokens_per_s =
        o.max_concurrency / replica.TpotSeconds(o.max_concurrency, w);
    o.usd_per_million_tokens =
        o.price_per_hour / (o.decode_tokens_per_s * 3600.0) * 1e6;
  }

  const std::vector<std::string> misses =
      Misses(r, replica, o, at, cap, tpot_slo_s, ttft_slo_s);
  o.meets_slo = misses.empty();
  o.verdict = o.meets_slo ? Verdict::kMeetsSlo : Verdict::kMissesSlo;
  o.reason = absl::StrJoin(misses, "; ");
  return o;
}

// Orders options that meet the SLO: cheaper first, then fewer GPUs, then more
// headroom, then cheaper tokens.
bool Better(const SizingOption& a, const SizingOption& b) {
  if (a.price_per_hour != b.price_per_hour) {
    return a.price_per_hour < b.price_per_hour;
  }
  if (a.tensor_parallel != b.tensor_parallel) {
    return a.tensor_parallel < b.tensor_parallel;
  }
  if (a.max_concurrency != b.max_concurrency) {
    return a.max_concurrency > b.max_concurrency;
  }
  return a.usd_per_million_tokens < b.usd_per_million_tokens;
}

std::string Describe(const SizingOption& o) {
  return absl::StrCat(o.gpu_class, " at TP ", o.tensor_parallel);
}

std::string Summarize(const SizingRequest& r, const SizingReport& rep) {
  if (rep.recommended.has_value()) {
    const SizingOption& o = rep.options[*rep.recommended];
    return absl::StrFormat(
        "recommended: %s -- $%.2f/h, holds %d concurrent within TPOT %.3f s "
        "(%.0f tokens/s, $%.2f per 1M tokens), TTFT %.2f s",
        Describe(o), o.price_per_hour, o.max_concurrency,
        absl::ToDoubleSeconds(r.slo.tpot), o.decode_tokens_per_s,
        o.usd_per_million_tokens, o.ttft_s);
  }
  const SizingOption* closest_fit = nullptr;
  const SizingOption* smallest_gap = nullptr;
  for (const SizingOption& o : rep.options) {
    if (o.fits && (closest_fit == nullptr ||
                   o.max_concurrency > closest_fit->max_concurrency ||
                   (o.max_concurrency == closest_fit->max_concurrency &&
                    o.tpot_s < closest_fit->tpot_s))) {
      closest_fit = &o;
    }
    if (o.verdict == Verdict::kDoesNotFit &&
        (smallest_gap == nullptr ||
         o.shortfall_gib < smallest_gap->shortfall_gib)) {
      smallest_gap = &o;
    }
  }
  if (closest_fit != nullptr) {
    return absl::StrCat("no option meets the SLO; closest: ",
                        Describe(*closest_fit), " (", closest_fit->reason, ")");
  }
  const std::string what = absl::StrCat(
      r.model.name, " with ", PrecisionName(r.weights), " weights and a ",
      r.workload.context_tokens, "-token context");
  if (smallest_gap != nullptr) {
    return absl::StrFormat(
        "%s fits nowhere: closest is %s, short by %.1f GiB per GPU; try "
        "lower-precision weights (fp8, int4), fp8 KV cache or a shorter "
        "context",
        what, Describe(*smallest_gap), smallest_gap->shortfall_gib);
  }
  return absl::StrCat(
      what, ": no class in the catalog can run it (",
      rep.options.empty() ? "no options" : rep.options.front().reason, ")");
}

}  // namespace

absl::StatusOr<SizingReport> Size(const SizingRequest& r,
                                  const Catalog& catalog) {
  if (absl::Status s = ValidateSizingRequest(r); !s.ok()) {
    return s;
  }
  std::vector<const GpuClass*> classes;
  if (r.gpu_classes.empty()) {
    for (const GpuClass& c : catalog.classes()) {
      classes.push_back(&c);
    }
  } else {
    for (const std::string& name : r.gpu_classes) {
      absl::StatusOr<const GpuClass*> c = catalog.Get(name);
      if (!c.ok()) {
        return c.status();
      }
      classes.push_back(*c);
    }
  }

  SizingReport rep;
  rep.model_name = r.model.name;
  rep.params = r.model.params;
  rep.weights_bytes = WeightBytes(r.model, r.weights, r.tuning.int4_group_size);
  rep.kv_bytes_per_token = KvBytesPerToken(r.model, r.kv);
  rep.options.reserve(classes.size() * std::size(kTensorParallelDegrees));
  for (const GpuClass* c : classes) {
    for (int tp : kTensorParallelDegrees) {
      if (tp > c->max_gpus_per_node) {
        break;
      }
      rep.options.push_back(Evaluate(r, *c, tp));
    }
  }
  for (size_t i = 0; i < rep.options.size(); ++i) {
    const SizingOption& o = rep.options[i];
    if (o.meets_slo &&
        (!rep.recommended || Better(o, rep.options[*rep.recommended]))) {
      rep.recommended = i;
    }
  }
  if (rep.recommended) {
    SizingOption& best = rep.options[*rep.recommended];
    best.verdict = Verdict::kRecommended;
    best.reason = "cheapest replica that meets the SLO";
    for (SizingOption& o : rep.options) {
      if (o.verdict == Verdict::kMeetsSlo) {
        o.reason =
            absl::StrFormat("costs $%.2f/h vs $%.2f/h for the recommended",
                            o.price_per_hour, best.price_per_hour);
      }
    }
  }
  rep.summary = Summarize(r, rep);
  return rep;
}

}  // namespace pilotlight::model
