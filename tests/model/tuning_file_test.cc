#include "controller/model/tuning_file.h"

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::model {
namespace {

using ::testing::HasSubstr;

// Every term written is read back to the same value, over a base that
// differs from it in each.
TEST(TuningFileTest, WhatIsWrittenIsReadBack) {
  EngineTuning t;
  t.memory_bandwidth_utilization = 0.5;
  t.weight_read_efficiency_8bit = 0.61;
  t.weight_read_efficiency_4bit = 0.42;
  t.moe_expert_read_efficiency = 0.33;
  t.model_flops_utilization = 0.44;
  t.model_flops_utilization_8bit = 0.55;
  t.model_flops_utilization_fp4 = 0.66;
  t.roofline_overlap = 0.77;
  t.step_overhead = absl::Microseconds(450);
  t.request_overhead = absl::Milliseconds(3);
  t.allreduce_latency_nvlink = absl::Nanoseconds(6600);
  t.allreduce_latency_pcie = absl::Microseconds(40);
  t.int4_group_size = 32;

  const std::string text = FormatTuningFile(t);
  EXPECT_THAT(text, HasSubstr("kind: SizingTuning\n"));
  EXPECT_THAT(text, HasSubstr("stepOverhead: 450us\n"));
  absl::StatusOr<EngineTuning> back = ParseTuning(text, "t.yaml", {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->memory_bandwidth_utilization, 0.5);
  EXPECT_DOUBLE_EQ(back->weight_read_efficiency_8bit, 0.61);
  EXPECT_DOUBLE_EQ(back->weight_read_efficiency_4bit, 0.42);
  EXPECT_DOUBLE_EQ(back->moe_expert_read_efficiency, 0.33);
  EXPECT_DOUBLE_EQ(back->model_flops_utilization, 0.44);
  EXPECT_DOUBLE_EQ(back->model_flops_utilization_8bit, 0.55);
  EXPECT_DOUBLE_EQ(back->model_flops_utilization_fp4, 0.66);
  EXPECT_DOUBLE_EQ(back->roofline_overlap, 0.77);
  EXPECT_EQ(back->step_overhead, absl::Microseconds(450));
  EXPECT_EQ(back->request_overhead, absl::Milliseconds(3));
  EXPECT_EQ(back->allreduce_latency_nvlink, absl::Nanoseconds(6600));
  EXPECT_EQ(back->allreduce_latency_pcie, absl::Microseconds(40));
  EXPECT_EQ(back->int4_group_size, 32);
}

// An absent key keeps the base's value; what is not a term of the file
// (memory headroom, batch, calibration) is never touched.
TEST(TuningFileTest, AbsentKeysKeepTheBase) {
  EngineTuning base;
  base.gpu_memory_utilization = 0.8;
  base.max_batch = 64;
  absl::StatusOr<EngineTuning> t = ParseTuning(
      "kind: SizingTuning\nstepOverhead: 0.5ms\nrooflineOverlap: 0.2\n",
      "t.yaml", base);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->step_overhead, absl::Microseconds(500));
  EXPECT_DOUBLE_EQ(t->roofline_overlap, 0.2);
  EXPECT_DOUBLE_EQ(t->memory_bandwidth_utilization,
                   base.memory_bandwidth_utilization);
  EXPECT_EQ(t->request_overhead, base.request_overhead);
  EXPECT_DOUBLE_EQ(t->gpu_memory_utilization, 0.8);
  EXPECT_EQ(t->max_batch, 64);
}

// Each error names the file and, where there is one, the key.
TEST(TuningFileTest, BadFilesAreErrorsNamingTheKey) {
  auto error = [](const std::string& body) {
    return std::string(ParseTuning(body, "t.yaml", {}).status().message());
  };
  EXPECT_THAT(error("kind: SizingCalibration\n"),
              HasSubstr("t.yaml: expected a map with kind: SizingTuning"));
  EXPECT_THAT(error("[1, 2"), HasSubstr("t.yaml: not valid YAML"));
  EXPECT_THAT(error("kind: SizingTuning\nstepOverheads: 1ms\n"),
              HasSubstr("t.yaml: stepOverheads: unknown key"));
  EXPECT_THAT(error("kind: SizingTuning\nrooflineOverlap: high\n"),
              HasSubstr("t.yaml: rooflineOverlap: expected a number"));
  EXPECT_THAT(error("kind: SizingTuning\nint4GroupSize: 12.5\n"),
              HasSubstr("t.yaml: int4GroupSize: expected an integer"));
  EXPECT_THAT(error("kind: SizingTuning\nstepOverhead: 2 apples\n"),
              HasSubstr("t.yaml: stepOverhead: \"2 apples\" is not a "
                        "duration"));
  EXPECT_THAT(error("kind: SizingTuning\nmemoryBandwidthUtilization: 1.5\n"),
              HasSubstr("t.yaml: tuning.memory_bandwidth_utilization = 1.5"));
  EXPECT_THAT(error("kind: SizingTuning\nstepOverhead: 2s\n"),
              HasSubstr("tuning.step_overhead must be 0..1s"));
}

}  // namespace
}  // namespace pilotlight::model
