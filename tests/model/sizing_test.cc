#include "controller/model/sizing.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::model {
namespace {

using ::testing::HasSubstr;

const Catalog& DefaultCatalog() {
  static const Catalog* c = new Catalog(*Catalog::Default());
  return *c;
}

const GpuClass& Gpu(absl::string_view name) {
  return **DefaultCatalog().Get(name);
}

SizingRequest Request(absl::string_view model,
                      Precision weights = Precision::kBf16) {
  SizingRequest r;
  r.model = *FindPreset(model);
  r.weights = weights;
  r.kv = Precision::kBf16;
  return r;
}

const SizingOption& Option(const SizingReport& rep, absl::string_view cls,
                           int tp) {
  for (const SizingOption& o : rep.options) {
    if (o.gpu_class == cls && o.tensor_parallel == tp) {
      return o;
    }
  }
  ADD_FAILURE() << "no option " << cls << " TP " << tp;
  static const SizingOption none;
  return none;
}

// Llama-3.1-8B bf16 on one A100-40GB, by hand: usable 40 x 0.9 - 2 = 34 GiB;
// KV room (34 GiB - 16.06 GB) / 128 KiB; one decode step at batch 1 with
// 1088 cached tokens reads 16.06e9 + 1088 x 131072 bytes at 1555 GB/s x
// MBU (memory time m), computes 2 x 8.03e9 FLOPs plus attention at 312
// TFLOPS x MFU (compute time c), and takes max(m, c) + (1 - overlap) x
// min(m, c) plus the step overhead.
TEST(ReplicaModelTest, Llama8bOnA100ByHand) {
  const EngineTuning tuning;
  const ReplicaModel r(*FindPreset("llama-3.1-8b"), Gpu("a100-40gb"), 1,
                       Precision::kBf16, Precision::kBf16, tuning);
  const double usable = 34.0 * kGiB;
  EXPECT_DOUBLE_EQ(r.usable_bytes_per_gpu(), usable);
  EXPECT_NEAR(r.kv_capacity_tokens(), (usable - 16.06e9) / 131072.0, 1.0);
  EXPECT_EQ(r.KvSequences(8192), 19);
  EXPECT_DOUBLE_EQ(r.ShortfallBytesPerGpu(8192), 0.0);
  const double mbu = tuning.memory_bandwidth_utilization;
  const double mfu = tuning.model_flops_utilization;
  const double overlap = tuning.roofline_overlap;
  const double overhead = absl::ToDoubleSeconds(tuning.step_overhead);
  auto norm = [overlap](double m, double c) {
    return std::max(m, c) + (1 - overlap) * std::min(m, c);
  };
  const double m = (16.06e9 + 1088.0 * 131072) / (1555e9 * mbu);
  const double c = (2 * 8.03e9 + 2 * 2.0 * 32 * 4096 * 1088) / (312e12 * mfu);
  EXPECT_NEAR(r.DecodeStepSeconds(1, 1088), norm(m, c) + overhead, 1e-9);
  // With the defaults (MBU 0.911, step overhead 1.845 ms): ~13.35 ms, i.e.
  // ~74.9 tokens/s, where the published run measured ~75.
  EXPECT_NEAR(r.DecodeStepSeconds(1, 1088), 0.013346, 0.0001);
  // A 1024-token prompt is compute-bound: (2 x 8.03e9 x 1024 + attention
  // 2 x 32 x 4096 x 1024^2) FLOPs, with the weights read once, plus the
  // request's overhead through the server.
  const double prefill_c =
      (2 * 8.03e9 * 1024 + 2.0 * 32 * 4096 * 1024.0 * 1024) / (312e12 * mfu);
  const double prefill_m = 16.06e9 / (1555e9 * mbu);
  EXPECT_NEAR(r.TtftSeconds(1024),
              norm(prefill_m, prefill_c) + overhead +
                  absl::ToDoubleSeconds(tuning.request_overhead),
              1e-9);
}

// A static batch: one prefill of every prompt, then output - 1 decode steps
// of the whole batch at the mean KV length.
TEST(ReplicaModelTest, StaticBatchIsOnePrefillThenDecodeSteps) {
  const EngineTuning tuning;
  const ReplicaModel r(*FindPreset("llama-3.1-8b"), Gpu("h100-80gb-sxm"), 1,
                       Precision::kBf16, Precision::kBf16, tuning);
  const double want = r.StepSeconds(0, 0, 64.0 * 512, 512) +
                      127 * r.DecodeStepSeconds(64, 512 + 64.0);
  EXPECT_NEAR(r.StaticBatchSeconds(64, 512, 128), want, 1e-12);
}

// Quantised weights read at their own efficiency: at batch 1 an int4 decode
// step moves ~0.27x the bytes of bf16 (0.53125 B per weight, the output
// projection at 2 B) at weight_read_efficiency_4bit of the 16-bit rate.
TEST(ReplicaModelTest, QuantisedWeightsReadAtTheirEfficiency) {
  EngineTuning tuning;
  tuning.step_overhead = absl::ZeroDuration();
  const ModelProfile m = *FindPreset("llama-3.1-8b");
  const GpuClass gpu = Gpu("a100-80gb");
  const ReplicaModel bf16(m, gpu, 1, Precision::kBf16, Precision::kBf16,
                          tuning);
  const ReplicaModel int4(m, gpu, 1, Precision::kInt4, Precision::kBf16,
                          tuning);
  const double bw = 2039e9 * tuning.memory_bandwidth_utilization;
  const double head = 128256.0 * 4096;
  const double int4_bytes = (m.params - head) * 0.53125 + head * 2;
  // Memory-bound at batch 1 with no KV: compute (2 FLOPs per weight at
  // 312 TFLOPS x MFU) adds (1 - overlap) of itself.
  const double compute =
      2 * m.params / (312e12 * tuning.model_flops_utilization);
  EXPECT_NEAR(int4.DecodeStepSeconds(1, 0),
              int4_bytes / (bw * tuning.weight_read_efficiency_4bit) +
                  (1 - tuning.roofline_overlap) * compute,
              1e-12);
  EXPECT_NEAR(bf16.DecodeStepSeconds(1, 0),
              m.params * 2 / bw + (1 - tuning.roofline_overlap) * compute,
              1e-12);
}

// Decode slows with the batch (more KV read), throughput rises, and TPOT at
// batch 1 has no prefill interference from other sequences.
TEST(ReplicaModelTest, BatchingTradesLatencyForThroughput) {
  const EngineTuning tuning;
  const ReplicaModel r(*FindPreset("llama-3.1-8b"), Gpu("h100-80gb-sxm"), 1,
                       Precision::kBf16, Precision::kBf16, tuning);
  const Workload w;
  EXPECT_DOUBLE_EQ(
      r.TpotSeconds(1, w),
      r.DecodeStepSeconds(1, w.prompt_tokens + w.output_tokens / 2.0));
  double last_tpot = 0;
  double last_tps = 0;
  for (int b : {1, 2, 4, 8, 16, 32, 64}) {
    const double tpot = r.TpotSeconds(b, w);
    EXPECT_GT(tpot, last_tpot) << b;
    EXPECT_GT(b / tpot, last_tps) << b;
    last_tpot = tpot;
    last_tps = b / tpot;
  }
}

// MaxConcurrency is the largest batch whose TPOT meets the SLO, bounded by
// the KV cache and max_batch.
TEST(ReplicaModelTest, MaxConcurrencyIsTheSloBoundary) {
  const EngineTuning tuning;
  const ReplicaModel r(*FindPreset("llama-3.1-8b"), Gpu("a100-80gb"), 1,
                       Precision::kBf16, Precision::kBf16, tuning);
  const Workload w;
  for (double slo : {0.015, 0.02, 0.03, 0.05, 0.08}) {
    const int b = r.MaxConcurrency(w, slo);
    ASSERT_GT(b, 0) << slo;
    EXPECT_LE(r.TpotSeconds(b, w), slo);
    if (b < r.KvSequences(w.context_tokens) && b < tuning.max_batch) {
      EXPECT_GT(r.TpotSeconds(b + 1, w), slo) << slo;
    }
  }
  // Faster than one weight read is impossible.
  EXPECT_EQ(r.MaxConcurrency(w, 0.005), 0);
  // A huge SLO is bounded by the KV cache (8192-token sequences).
  EXPECT_EQ(r.MaxConcurrency(w, 10.0), r.KvSequences(w.context_tokens));
}

// MoE reads only the experts a batch touches: active weights at batch 1,
// nearly all of them at a large batch.
TEST(ReplicaModelTest, MoeReadsTouchedExperts) {
  EngineTuning tuning;
  tuning.step_overhead = absl::ZeroDuration();
  tuning.moe_expert_read_efficiency = 1.0;  // experts as fast as dense
  const ModelProfile m = *FindPreset("mixtral-8x7b");
  const ReplicaModel r(m, Gpu("h100-80gb-sxm"), 2, Precision::kBf16,
                       Precision::kBf16, tuning);
  const double bw = 3350e9 * tuning.memory_bandwidth_utilization;
  const double b1 = r.DecodeStepSeconds(1, 0);
  // At batch 1: active bytes / tp / bandwidth, plus all-reduces: latency x
  // log2(2) and 2 x (2-1)/2 x 4096 x 2 bytes over 450 GB/s, twice a layer.
  const double comm = 2 * 32 *
                      (absl::ToDoubleSeconds(tuning.allreduce_latency_nvlink) +
                       2.0 * 1 / 2 * 4096 * 2 / 450e9);
  // Compute at batch 1 adds well under 1 % through the overlap rule.
  EXPECT_NEAR(b1, m.active_params * 2 / 2 / bw + comm, 0.01 * b1);
  const double b256 = r.DecodeStepSeconds(256, 0);
  EXPECT_GT(b256, 3.0 * b1);
  // At batch 256 compute (2 x 12.9e9 x 256 FLOPs) joins the expert reads.
  EXPECT_LT(b256, (m.params * 2 / 2 / bw) * 1.5 + 2 * 32 * 50e-6);
}

// Experts are gathered by index at run time and read at
// moe_expert_read_efficiency of the dense rate; the shared weights (attention,
// embeddings, norms) are not. Mixtral 8x7B: 46.703e9 parameters, 12.879e9
// active, 8 experts, 2 per token, so one expert is (46.703 - 12.879) / 6 =
// 5.637e9 parameters and the shared part 46.703 - 8 x 5.637 = 1.605e9.
TEST(ReplicaModelTest, MoeExpertsReadAtTheirOwnEfficiency) {
  EngineTuning tuning;
  tuning.step_overhead = absl::ZeroDuration();
  tuning.allreduce_latency_nvlink = absl::ZeroDuration();
  tuning.moe_expert_read_efficiency = 0.5;
  const ModelProfile m = *FindPreset("mixtral-8x7b");
  const ReplicaModel r(m, Gpu("a100-80gb"), 1, Precision::kBf16,
                       Precision::kBf16, tuning);
  const double expert = (46.703e9 - 12.879e9) / 6;
  const double shared = 46.703e9 - 8 * expert;
  // One bf16 decode step at batch 1 on an A100 (2,039 GB/s): the dense
  // equivalent of 1.605e9 + 2 x 5.637e9 / 0.5 parameters at 2 bytes, i.e.
  // 48.3 GB, over 2,039e9 x MBU.
  const double bw = 2039e9 * tuning.memory_bandwidth_utilization;
  EXPECT_NEAR(r.DecodeStepSeconds(1, 0), (shared + 4 * expert) * 2 / bw,
              0.01 * r.DecodeStepSeconds(1, 0));
  // A dense model is untouched by the term.
  const ModelProfile dense = *FindPreset("llama-3.1-8b");
  EngineTuning other = tuning;
  other.moe_expert_read_efficiency = 1.0;
  EXPECT_DOUBLE_EQ(ReplicaModel(dense, Gpu("a100-80gb"), 1, Precision::kBf16,
                                Precision::kBf16, tuning)
                       .DecodeStepSeconds(1, 100),
                   ReplicaModel(dense, Gpu("a100-80gb"), 1, Precision::kBf16,
                                Precision::kBf16, other)
                       .DecodeStepSeconds(1, 100));
}

// Tensor parallelism splits the weights (faster decode) but pays all-reduces,
// more over PCIe than NVLink: each all-reduce's latency is the link's
// latency times log2(tp).
TEST(ReplicaModelTest, TensorParallelCostsCommunication) {
  const EngineTuning tuning;
  const ModelProfile m = *FindPreset("llama-3.1-70b");
  const ReplicaModel tp2(m, Gpu("h100-80gb-sxm"), 2, Precision::kBf16,
                         Precision::kBf16, tuning);
  const ReplicaModel tp4(m, Gpu("h100-80gb-sxm"), 4, Precision::kBf16,
                         Precision::kBf16, tuning);
  EXPECT_LT(tp4.DecodeStepSeconds(1, 1000), tp2.DecodeStepSeconds(1, 1000));
  EXPECT_GT(tp4.DecodeStepSeconds(1, 1000), tp2.DecodeStepSeconds(1, 1000) / 2);
  const ModelProfile small = *FindPreset("llama-3.1-8b");
  EngineTuning no_latency = tuning;
  no_latency.allreduce_latency_nvlink = absl::ZeroDuration();
  no_latency.allreduce_latency_pcie = absl::ZeroDuration();
  auto latency_part = [&](const char* gpu, int tp) {
    const ReplicaModel with(small, Gpu(gpu), tp, Precision::kBf16,
                            Precision::kBf16, tuning);
    const ReplicaModel without(small, Gpu(gpu), tp, Precision::kBf16,
                               Precision::kBf16, no_latency);
    return with.DecodeStepSeconds(1, 0) - without.DecodeStepSeconds(1, 0);
  };
  // 2 x 32 all-reduces x latency x log2(tp).
  EXPECT_NEAR(latency_part("h100-80gb-sxm", 2),
              64 * absl::ToDoubleSeconds(tuning.allreduce_latency_nvlink),
              1e-9);
  EXPECT_NEAR(latency_part("h100-80gb-sxm", 8),
              3 * 64 * absl::ToDoubleSeconds(tuning.allreduce_latency_nvlink),
              1e-9);
  EXPECT_GT(latency_part("h100-80gb-pcie", 2),
            2 * latency_part("h100-80gb-sxm", 2));
}

// Llama-3.1-70B bf16 does not fit one 80 GB GPU and needs TP >= 2; fp8
// weights fit at TP 1 on an H100 (with a shorter context) and H200.
TEST(SizeTest, Llama70bNeedsTensorParallel) {
  SizingRequest r = Request("llama-3.1-70b");
  r.gpu_classes = {"h100-80gb-sxm", "h200"};
  absl::StatusOr<SizingReport> rep = Size(r, DefaultCatalog());
  ASSERT_TRUE(rep.ok()) << rep.status();
  const SizingOption& tp1 = Option(*rep, "h100-80gb-sxm", 1);
  EXPECT_FALSE(tp1.fits);
  EXPECT_EQ(tp1.verdict, Verdict::kDoesNotFit);
  EXPECT_THAT(tp1.reason, HasSubstr("needs 133.9 GiB per GPU"));
  EXPECT_THAT(tp1.reason, HasSubstr("has 69.6 usable"));
  EXPECT_NEAR(tp1.shortfall_gib, 133.9 - 69.6, 0.1);
  EXPECT_TRUE(Option(*rep, "h100-80gb-sxm", 2).fits);
  EXPECT_FALSE(Option(*rep, "h200", 1).fits);  // 131.4 GiB > 124 usable

  r.weights = Precision::kFp8;
  r.workload.context_tokens = 4096;
  r.workload.prompt_tokens = 1024;
  rep = Size(r, DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(Option(*rep, "h100-80gb-sxm", 1).fits);
  EXPECT_TRUE(Option(*rep, "h200", 1).fits);
  // fp8 weights, the 128256 x 8192 output projection at 16 bits.
  EXPECT_NEAR(rep->weights_bytes, 71.6047e9, 1e6);
}

// Default request for Llama-3.1-8B: T4 lacks bf16, the L4 is the cheapest
// class that holds one sequence within TPOT 80 ms.
TEST(SizeTest, Llama8bDefaultRecommendsL4) {
  absl::StatusOr<SizingReport> rep =
      Size(Request("llama-3.1-8b"), DefaultCatalog());
  ASSERT_TRUE(rep.ok()) << rep.status();
  ASSERT_TRUE(rep->recommended.has_value());
  const SizingOption& best = rep->options[*rep->recommended];
  EXPECT_EQ(best.gpu_class, "l4");
  EXPECT_EQ(best.tensor_parallel, 1);
  EXPECT_EQ(best.verdict, Verdict::kRecommended);
  EXPECT_THAT(rep->summary, HasSubstr("recommended: l4 at TP 1"));
  const SizingOption& t4 = Option(*rep, "t4", 1);
  EXPECT_EQ(t4.verdict, Verdict::kUnsupported);
  EXPECT_THAT(t4.reason, HasSubstr("no bf16"));
  // Every other option that meets the SLO costs at least as much.
  for (const SizingOption& o : rep->options) {
    if (o.meets_slo) {
      EXPECT_GE(o.price_per_hour, best.price_per_hour) << o.gpu_class;
    }
    if (o.verdict == Verdict::kMeetsSlo) {
      EXPECT_THAT(o.reason, HasSubstr("costs $"));
    }
  }
}

// Reasons carry the numbers: KV capacity, TPOT and TTFT misses.
TEST(SizeTest, ReasonsSayWhyOptionsLose) {
  SizingRequest r = Request("llama-3.1-8b");
  r.workload.concurrency = 64;
  absl::StatusOr<SizingReport> rep = Size(r, DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  const SizingOption& l4 = Option(*rep, "l4", 1);
  EXPECT_TRUE(l4.fits);
  EXPECT_FALSE(l4.meets_slo);
  EXPECT_THAT(l4.reason, HasSubstr("KV cache holds 3 sequences of 8192 "
                                   "tokens, need 64"));

  r.slo.tpot = absl::Milliseconds(10);
  r.workload.concurrency = 1;
  r.gpu_classes = {"a100-80gb"};
  rep = Size(r, DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  EXPECT_THAT(Option(*rep, "a100-80gb", 1).reason,
              HasSubstr("> 0.010 s even at 1 concurrent"));

  r = Request("llama-3.1-8b");
  r.slo.ttft = absl::Milliseconds(20);
  r.gpu_classes = {"l4"};
  rep = Size(r, DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  EXPECT_THAT(Option(*rep, "l4", 1).reason,
              HasSubstr("s > 0.02 s for a 1024-token prompt"));
  EXPECT_FALSE(rep->recommended.has_value());
  EXPECT_THAT(rep->summary, HasSubstr("no option meets the SLO; closest"));
}

// FP8/INT8 weights only on classes that have those tensor cores.
TEST(SizeTest, Fp8OnlyWhereSupported) {
  absl::StatusOr<SizingReport> rep =
      Size(Request("llama-3.1-8b", Precision::kFp8), DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  for (const char* cls : {"t4", "a10g", "a100-40gb", "a100-80gb"}) {
    const SizingOption& o = Option(*rep, cls, 1);
    EXPECT_EQ(o.verdict, Verdict::kUnsupported) << cls;
    EXPECT_THAT(o.reason, HasSubstr("fp8 weights need fp8 tensor cores"));
  }
  for (const char* cls : {"l4", "l40s", "h100-80gb-sxm", "h200", "mi300x"}) {
    EXPECT_TRUE(Option(*rep, cls, 1).fits) << cls;
  }
  EXPECT_NEAR(rep->weights_bytes, 8.5553e9, 1e6);  // head at 16 bits
}

// Qwen2.5-7B has 28 attention heads: TP 8 cannot split them.
TEST(SizeTest, TensorParallelMustDivideHeads) {
  SizingRequest r = Request("qwen2.5-7b");
  r.gpu_classes = {"l4"};
  absl::StatusOr<SizingReport> rep = Size(r, DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(Option(*rep, "l4", 8).verdict, Verdict::kUnsupported);
  EXPECT_THAT(Option(*rep, "l4", 8).reason,
              HasSubstr("28 attention heads do not split over TP 8"));
  EXPECT_NE(Option(*rep, "l4", 4).verdict, Verdict::kUnsupported);
}

// A model that fits nowhere says so, and by how much.
TEST(SizeTest, FitsNowhereSaysByHowMuch) {
  SizingRequest r = Request("llama-3.1-405b");
  r.gpu_classes = {"h100-80gb-sxm", "a100-80gb"};
  absl::StatusOr<SizingReport> rep = Size(r, DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  EXPECT_FALSE(rep->recommended.has_value());
  // 811.7 GB / 8 = 94.5 GiB + 0.5 GiB of KV vs 70.0 usable on an A100-80GB
  // (69.6 on an H100, whose driver reports 79.6 GiB).
  EXPECT_THAT(rep->summary,
              HasSubstr("llama-3.1-405b with bf16 weights and a 8192-token "
                        "context fits nowhere: closest is a100-80gb at TP 8, "
                        "short by 25.0 GiB per GPU"));
}

// Every class x TP option is listed, TP degrees bounded by the node size.
TEST(SizeTest, ListsEveryClassAndDegree) {
  absl::StatusOr<SizingReport> rep =
      Size(Request("llama-3.2-1b"), DefaultCatalog());
  ASSERT_TRUE(rep.ok());
  // 10 classes with 8 GPUs per node x 4 degrees + T4 (4 per node) x 3.
  EXPECT_EQ(rep->options.size(), 10u * 4 + 3);
  EXPECT_EQ(rep->options.front().gpu_class, "t4");
}

// Impossible numbers are errors that name the field, the value and range.
TEST(SizeTest, RejectsImpossibleRequests) {
  struct Row {
    const char* what;
    void (*mutate)(SizingRequest&);
    const char* expect;
  };
  const Row rows[] = {
      {"zero context", [](SizingRequest& r) { r.workload.context_tokens = 0; },
       "context_tokens = 0 is out of range (1..131072"},
      {"context above the model's",
       [](SizingRequest& r) { r.workload.context_tokens = 200000; },
       "context_tokens = 200000 is out of range (1..131072, llama-3.1-8b"},
      {"prompt too long",
       [](SizingRequest& r) { r.workload.prompt_tokens = 9000; },
       "prompt_tokens = 9000"},
      {"output too long",
       [](SizingRequest& r) { r.workload.output_tokens = 7200; },
       "output_tokens = 7200 is out of range (1..7168"},
      {"zero concurrency", [](SizingRequest& r) { r.workload.concurrency = 0; },
       "concurrency = 0"},
      {"zero tpot", [](SizingRequest& r) { r.slo.tpot = absl::ZeroDuration(); },
       "slo.tpot = 0 is out of range"},
      {"negative ttft",
       [](SizingRequest& r) { r.slo.ttft = absl::Seconds(-1); },
       "slo.ttft = -1s is out of range"},
      {"mbu above 1",
       [](SizingRequest& r) { r.tuning.memory_bandwidth_utilization = 1.5; },
       "tuning.memory_bandwidth_utilization = 1.5"},
      {"bad model", [](SizingRequest& r) { r.model.head_dim = 0; },
       "head_dim = 0"},
  };
  for (const Row& row : rows) {
    SizingRequest r = Request("llama-3.1-8b");
    row.mutate(r);
    absl::StatusOr<SizingReport> rep = Size(r, DefaultCatalog());
    ASSERT_FALSE(rep.ok()) << row.what;
    EXPECT_EQ(rep.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(rep.status().message()), HasSubstr(row.expect))
        << row.what;
  }
  SizingRequest r = Request("llama-3.1-8b");
  r.gpu_classes = {"v100"};
  absl::StatusOr<SizingReport> rep = Size(r, DefaultCatalog());
  ASSERT_FALSE(rep.ok());
  EXPECT_THAT(std::string(rep.status().message()), HasSubstr("known: t4"));
}

// A catalog with an impossible figure is refused before sizing.
TEST(SizeTest, CatalogFromClassesValidates) {
  GpuClass g = Gpu("l4");
  g.bandwidth_gbps = -1;
  absl::StatusOr<Catalog> c = Catalog::FromClasses({g});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("gpu.bandwidthGBps: -1 is out of range"));
}

}  // namespace
}  // namespace pilotlight::model
