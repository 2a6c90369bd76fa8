// The GPU sizing model: from a model profile, a GPU class, a precision and a
// tensor-parallel degree to memory fit, decode speed, time to first token,
// per-replica concurrency at a TPOT SLO, and cost per million tokens. Pure
// code: no I/O, no clock. docs/sizing.md explains every formula.
//
// The formulas (all per replica of `tp` GPUs on one node):
//   weights     W = params x bytes(weights)  (4-bit: scales included;
//               quantised: the output projection stays 16-bit)
//   KV / token  K = 2 x layers x kv_heads x head_dim x bytes(kv)
//   usable      U = memory x gpu_memory_utilization - runtime overhead
//   fit         W/tp + K_gpu x context <= U   (one full-context sequence)
//   KV capacity C = (U - W/tp) / K_gpu tokens;  sequences = C / context
//   step(b, p)  = max(m, c) + (1 - overlap) x min(m, c) + step overhead
//                 + 2 x layers x all-reduce(b + p tokens)       (tp > 1)
//       b decode sequences and p prompt tokens prefilled in the same step
//       (continuous batching with chunked prefill); memory time
//       m = weights read / tp / (BW x MBU x eff(format))
//           + b x mean_kv_tokens x K_gpu / (BW x MBU)
//       (MoE: only the experts the step's tokens touch are read, at
//       moe_expert_read_efficiency of the dense rate); compute
//       time c = (2 x active x (b + p) + attention) / (tp x FLOPS x MFU)
//   all-reduce(n) = latency x log2(tp) + 2 (tp-1)/tp x n x hidden x 2 / link
//   TPOT(b)  = step(b, p = (b - 1) / output x prompt): while a sequence
//              decodes, the others finish and their successors are prefilled
//   TTFT     = step(0, prompt) + request overhead
//   max concurrency = the largest b <= min(max_batch, sequences) with
//                     TPOT(b) <= SLO
//   tokens/s = b_max / TPOT(b_max);  $/1M = price/h / (tokens/s x 3600) x 1e6
//
// Example:
//   SizingRequest req{.model = *FindPreset("llama-3.1-8b")};
//   absl::StatusOr<SizingReport> r = Size(req, *Catalog::Default());
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/model/gpu_class.h"
#include "controller/model/model_profile.h"
#include "controller/model/precision.h"

namespace pilotlight::model {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The request shape the replica must serve.
struct Workload {
  int context_tokens = 8192;  // KV room reserved for every sequence
  int prompt_tokens = 1024;   // typical prompt (TTFT, prefill interference)
  int output_tokens = 256;    // typical output (decode KV length, turnover)
  int concurrency = 1;        // concurrent sequences one replica must hold
};

struct Slo {
  absl::Duration ttft = absl::Seconds(2);
  absl::Duration tpot = absl::Milliseconds(80);
};

// Efficiency factors of the serving engine (vLLM-like defaults), one per
// physical mechanism. Each default is fitted to the "fit" rows of
// controller/model/data/measurements.csv (published measurements, each row
// citing its source) and judged on its "holdout" rows; docs/sizing.md gives
// the figures. Override them from your own runs (`pilotlight size
// --validate` checks the model on your numbers).
struct EngineTuning {
  // Achieved / peak memory bandwidth reading 16-bit weights and the KV cache
  // in decode.
  double memory_bandwidth_utilization = 0.911;
  // Weight-read efficiency of quantised formats, relative to 16-bit: decode
  // GEMV kernels unpack and scale the weights as they read them, and reach a
  // smaller share of peak bandwidth (gpt-fast on A100: int8 weight-only
  // 1,069 GB/s and int4 863 GB/s against 1,397 GB/s for bf16). Fitted
  // (docs/sizing.md), the 4-bit one at its bound of 1: with the fixed step
  // cost apart, the fit rows' 4-bit kernels keep pace with 16-bit reads.
  double weight_read_efficiency_8bit = 0.799;  // fp8, int8
  double weight_read_efficiency_4bit = 1.0;    // int4, fp4
  // Read efficiency of MoE expert weights, relative to dense weights of the
  // same format: a token's experts are picked at run time, so their weights
  // are gathered by index (a grouped or gathered GEMV per expert) rather
  // than streamed by one dense kernel. 1: as fast as dense.
  double moe_expert_read_efficiency = 0.560;
  // int4 weights: elements per 16-bit scale and zero point (AWQ/GPTQ 128).
  int int4_group_size = 128;
  // Achieved / peak tensor FLOPS in prefill, by the precision the math runs
  // at: 16-bit (bf16, fp16, and int4 weight-only, which unpacks to 16 bits),
  // 8-bit (fp8, int8) and fp4.
  double model_flops_utilization = 0.740;
  double model_flops_utilization_8bit = 0.531;
  double model_flops_utilization_fp4 = 0.35;
  // How one step's memory time m and compute time c combine: the longer of
  // the two plus what of the shorter does not hide under it,
  // max(m, c) + (1 - overlap) x min(m, c). 0 adds them (no overlap), 1 is
  // the plain roofline (perfect overlap). Kernels overlap the two only in
  // part, most visibly where they are close (short prefills, mid-size
  // batches).
  double roofline_overlap = 0.121;
  // Fixed cost of every engine step, whatever its size: the scheduler,
  // sampling, kernel launches and the host's share of the step.
  absl::Duration step_overhead = absl::Microseconds(1845);
  // Fixed cost of one request through an HTTP server (tokenising, queueing
  // into the engine, detokenising, the HTTP exchange), added to its time to
  // first token. 0 for offline engines.
  absl::Duration request_overhead = absl::Milliseconds(10);
  // Fraction of device memory the engine may use (vLLM's default 0.9).
  double gpu_memory_utilization = 0.90;
  // Per GPU, inside that fraction: CUDA context, activations, CUDA graphs.
  double runtime_overhead_gib = 2.0;
  // Most sequences one replica batches (vLLM's max_num_seqs default).
  int max_batch = 256;
  // Latency of one all-reduce per doubling of the tensor-parallel degree
  // (NCCL's tree and NVLS algorithms take log2(tp) hops for the small
  // messages of decode), by interconnect; the bytes term is separate.
  absl::Duration allreduce_latency_nvlink = absl::Nanoseconds(1700);
  absl::Duration allreduce_latency_pcie = absl::Microseconds(25);
  // Calibration (calibration.h): observed / predicted time of a decode step
  // and of a prefill on this class, from the running servers. 1: none.
  double decode_time_scale = 1.0;
  double prefill_time_scale = 1.0;
};

// Calibration factors for one (model, GPU class), saved or learned.
struct SavedCalibration {
  std::string model;
  std::string gpu_class;
  double decode_scale = 1.0;
  double prefill_scale = 1.0;
};

// What one replica (tp GPUs of one class) can do for one model. Built once,
// queried many times: every method is O(1) except MaxConcurrency (O(log b)).
class ReplicaModel {
 public:
  ReplicaModel(const ModelProfile& model, const GpuClass& gpu, int tp,
               Precision weights, Precision kv, const EngineTuning& tuning);

  int tensor_parallel() const { return tp_; }
  bool precision_supported() const { return flops_per_s_ > 0; }
  // Memory the engine may fill per GPU, after the runtime overhead.
  double usable_bytes_per_gpu() const { return usable_bytes_per_gpu_; }
  double weight_bytes_per_gpu() const { return weight_bytes_ / tp_; }
  double kv_bytes_per_token_per_gpu() const { return kv_bytes_per_token_gpu_; }
  // KV tokens the replica can hold once weights are loaded (<= 0: no room).
  double kv_capacity_tokens() const;
  // Bytes per GPU still missing for one sequence of `context` tokens
  // (0 when it fits).
  double ShortfallBytesPerGpu(int context_tokens) const;
  // Sequences of `context` tokens the KV cache holds.
  int KvSequences(int context_tokens) const;

  // One decode step for `batch` sequences holding `mean_kv_tokens` each.
  double DecodeStepSeconds(int batch, double mean_kv_tokens) const {
    return StepSeconds(batch, mean_kv_tokens, 0, 0);
  }
  // One engine step: `decode_batch` decoding sequences plus `prefill_tokens`
  // prompt tokens (of prompts `prompt_tokens` long) prefilled alongside.
  double StepSeconds(double decode_batch, double mean_kv_tokens,
                     double prefill_tokens, double prompt_tokens) const;
  // Unloaded time to first token for a prompt of `prompt_tokens`: one
  // prefill step, plus the request's fixed cost through the server.
  double TtftSeconds(int prompt_tokens) const;
  // Time to run `batch` prompts of `prompt_tokens` and decode
  // `output_tokens` each, all in one static batch (prefill together, then
  // decode together): the offline benchmarks' shape.
  double StaticBatchSeconds(int batch, int prompt_tokens,
                            int output_tokens) const;
  // Steady-state time per output token at `batch` concurrent sequences of
  // the workload's shape, including the prefills of the requests that
  // replace the other sequences as they finish.
  double TpotSeconds(int batch, const Workload& w) const;
  // Largest batch within the KV capacity and max_batch whose TPOT meets
  // `tpot_slo_s`; 0 when even one sequence misses it or does not fit.
  int MaxConcurrency(const Workload& w, double tpot_slo_s) const;

 private:
  double AllReduceSeconds(double tokens) const;
  // Weight bytes a step of `tokens` reads (a MoE model: the shared part and
  // the experts the tokens touch), the expert part weighted by 1 / the MoE
  // read efficiency: the bytes a dense read would take as long to stream.
  double WeightBytesReadDenseEquivalent(double tokens) const;

  int tp_;
  int layers_;
  int max_batch_;
  bool heads_split_evenly_;  // attention heads divide across tp ranks
  double weight_bytes_;
  double shared_weight_bytes_;  // MoE: non-expert part
  double expert_bytes_;         // MoE: one expert across all layers
  double moe_expert_read_efficiency_;
  int experts_;
  int experts_per_token_;
  double active_params_;
  double hidden_;
  double attn_flop_coeff_;  // attention FLOPs per (prompt token)^2
  double kv_bytes_per_token_gpu_;
  double usable_bytes_per_gpu_;
  double bandwidth_bytes_per_s_;   // per GPU, x MBU (KV cache, 16-bit reads)
  double weight_read_efficiency_;  // of the weight format, relative to 16-bit
  double flops_per_s_;             // per replica (tp GPUs), x MFU
  double link_bytes_per_s_;        // per GPU per direction
  double allreduce_latency_s_;     // whole all-reduce at this tp
  double overlap_;  // share of the shorter of memory and compute hidden
  double step_overhead_s_;
  double request_overhead_s_;
  double decode_time_scale_;
  double prefill_time_scale_;
};

struct SizingRequest {
  ModelProfile model;
  Precision weights = Precision::kBf16;
  Precision kv = Precision::kBf16;
  Workload workload;
  Slo slo;
  EngineTuning tuning;
  // Restrict to these classes (empty: every class in the catalog).
  std::vector<std::string> gpu_classes;
  // Applied to the classes they name, where their model is this model's.
  std::vector<SavedCalibration> calibrations;
};

enum class Verdict {
  kRecommended,  // cheapest option that meets the SLO
  kMeetsSlo,     // meets the SLO, but costs more than the recommended
  kMissesSlo,    // fits in memory, misses a latency or concurrency goal
  kDoesNotFit,   // weights + one sequence exceed memory
  kUnsupported,  // precision or TP degree impossible on this class
};

absl::string_view VerdictName(Verdict v);

// One replica shape: a GPU class at one tensor-parallel degree.
struct SizingOption {
  std::string gpu_class;
  int tensor_parallel = 1;
  bool fits = false;
  int max_concurrency = 0;            // at the TPOT SLO
  int kv_sequences = 0;               // full-context sequences the KV holds
  double decode_tokens_per_s = 0;     // at max_concurrency; 0 if none
  double ttft_s = 0;                  // unloaded, at the workload's prompt
  double tpot_s = 0;                  // at the requested concurrency
  double price_per_hour = 0;          // on-demand, whole replica
  double usd_per_million_tokens = 0;  // at max_concurrency; 0 if none
  // Where it fits: a start from a free node with the image cached (the
  // cold-start model's defaults), and the sleep model's figures.
  double cold_start_s = 0;
  double wake_s = 0;                 // asleep in host memory -> serving
  int sleeping_per_gpu = 0;          // engines one pool GPU holds asleep
  double asleep_price_per_hour = 0;  // 0 where none fits
  bool meets_slo = false;
  bool calibrated = false;   // a calibration for this class was applied
  double shortfall_gib = 0;  // per GPU, when it does not fit
  Verdict verdict = Verdict::kUnsupported;
  std::string reason;  // one line with the numbers
};

struct SizingReport {
  std::string model_name;
  double params = 0;
  double weights_bytes = 0;
  double kv_bytes_per_token = 0;
  std::vector<SizingOption> options;  // catalog order, TP ascending
  std::optional<size_t> recommended;  // index into options
  std::string summary;                // the recommendation line
};

// Weight bytes of the whole model at precision `p` (4-bit: scales included,
// int4 with one scale and zero point per `int4_group_size` weights). A
// quantised model keeps its output projection (vocab x hidden) at 16 bits,
// as AWQ, GPTQ and FP8/NVFP4 checkpoints do.
double WeightBytes(const ModelProfile& m, Precision p,
                   int int4_group_size = 128);
// KV-cache bytes per token of the whole model: 2 x layers x kv_heads x
// head_dim x bytes(kv).
double KvBytesPerToken(const ModelProfile& m, Precision kv);

// Checks the request; errors name the field, its value and the range.
absl::Status ValidateSizingRequest(const SizingRequest& r);
// The tuning part of it (also for a tuning read from a file).
absl::Status ValidateTuning(const EngineTuning& t);

// Evaluates every class (and TP 1/2/4/8 up to the node size) and picks the
// cheapest replica shape that serves the workload within the SLO.
absl::StatusOr<SizingReport> Size(const SizingRequest& r,
                                  const Catalog& catalog);

}  // namespace pilotlight::model
