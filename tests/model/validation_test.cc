#include "controller/model/validation.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::model {
namespace {

using ::testing::HasSubstr;

constexpr char kHeader[] =
    "id,split,kind,model,gpu,tp,weights,kv,group,batch,prompt,output,path,"
    "measured,source\n";

const ModelResolver kPresets = [](const std::string& name) {
  return FindPreset(name);
};

Catalog DefaultCatalog() { return *Catalog::Default(); }

// Bad rows are errors naming the file, the line and the field.
TEST(ValidationTest, ParseErrorsNameTheLine) {
  struct Row {
    const char* row;
    const char* expect;
  };
  const Row rows[] = {
      {"a,both,decode_tps,llama-3.1-8b,l4,1,bf16,bf16,,1,8,8,server,1,x",
       "f.csv:2: split = \"both\""},
      {"a,fit,speed,llama-3.1-8b,l4,1,bf16,bf16,,1,8,8,server,1,x",
       "kind = \"speed\""},
      {"a,fit,decode_tps,llama-3.1-8b,l4,0,bf16,bf16,,1,8,8,server,1,x",
       "tp = \"0\""},
      {"a,fit,decode_tps,llama-3.1-8b,l4,1,fp6,bf16,,1,8,8,server,1,x",
       "unknown precision \"fp6\""},
      {"a,fit,decode_tps,llama-3.1-8b,l4,1,bf16,int4,,1,8,8,server,1,x",
       "not a KV-cache format"},
      {"a,fit,decode_tps,llama-3.1-8b,l4,1,bf16,bf16,,1,8,8,cloud,1,x",
       "path = \"cloud\""},
      {"a,fit,decode_tps,llama-3.1-8b,l4,1,bf16,bf16,,1,8,8,server,-3,x",
       "measured = \"-3\""},
      {"a,fit,decode_tps,llama-3.1-8b,l4,1,bf16,bf16,,1,8,8,server,1,\"x",
       "unterminated quoted field"},
  };
  for (const Row& r : rows) {
    absl::StatusOr<std::vector<Measurement>> m =
        ParseMeasurements(absl::StrCat(kHeader, r.row, "\n"), "f.csv");
    ASSERT_FALSE(m.ok()) << r.row;
    EXPECT_THAT(m.status().message(), HasSubstr(r.expect)) << r.row;
  }
  EXPECT_THAT(ParseMeasurements("id,split\n", "f.csv").status().message(),
              HasSubstr("no column \"kind\""));
  EXPECT_THAT(ParseMeasurements(kHeader, "f.csv").status().message(),
              HasSubstr("no measurement rows"));
}

// A row the model cannot express is an error naming the row.
TEST(ValidationTest, RowsTheModelCannotExpress) {
  auto validate = [](const char* row) {
    absl::StatusOr<std::vector<Measurement>> m =
        ParseMeasurements(absl::StrCat(kHeader, row, "\n"), "f.csv");
    EXPECT_TRUE(m.ok()) << m.status();
    return Validate(*m, kPresets, DefaultCatalog(), EngineTuning{}).status();
  };
  EXPECT_THAT(
      validate("a,fit,decode_tps,llama-3.1-8b,z9,1,bf16,bf16,,1,8,8,,1,x")
          .message(),
      HasSubstr("row a (line 2): unknown GPU class \"z9\""));
  EXPECT_THAT(
      validate("a,fit,decode_tps,llama-3.1-8b,a100-80gb,1,fp8,fp8,,1,8,8,,1,x")
          .message(),
      HasSubstr("cannot run fp8 weights"));
  EXPECT_THAT(
      validate("a,fit,decode_tps,llama-3.1-70b,l4,1,bf16,bf16,,1,8,8,,1,x")
          .message(),
      HasSubstr("does not fit on 1 x l4 at bf16 (its weights alone exceed"));
  EXPECT_THAT(
      validate("a,fit,decode_tps,nope-1b,l4,1,bf16,bf16,,1,8,8,,1,x").message(),
      HasSubstr("unknown model \"nope-1b\""));
}

// A shape within the GPUs' memory but beyond the usable budget ran, so the
// row is still judged on speed, flagged as a miss of the memory model: 8B
// bf16 (15 GiB) on an L4 with a 30,000-token sequence (3.7 GiB of KV)
// exceeds the 0.9 x memory - 2 GiB budget.
TEST(ValidationTest, ShapesBeyondTheUsableBudgetAreJudgedAndFlagged) {
  absl::StatusOr<std::vector<Measurement>> m = ParseMeasurements(
      absl::StrCat(kHeader,
                   "a,holdout,decode_tps,llama-3.1-8b,l4,1,bf16,bf16,,1,30000,"
                   "100,offline,10,x\n"
                   "b,holdout,decode_tps,llama-3.1-8b,l4,1,bf16,bf16,,1,1000,"
                   "100,offline,10,x\n"),
      "f.csv");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<ValidationReport> r =
      Validate(*m, kPresets, DefaultCatalog(), EngineTuning{});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_GT(r->rows[0].shortfall_gib, 0.1);
  EXPECT_LT(r->rows[0].shortfall_gib, 2.0);
  EXPECT_GT(r->rows[0].predicted, 0);
  EXPECT_EQ(r->rows[1].shortfall_gib, 0);
  const std::string table = FormatValidation(*r);
  EXPECT_THAT(table, HasSubstr("(does not fit: "));
  EXPECT_THAT(table, HasSubstr("1 row(s) ran on GPUs the memory model says"));
}

// Each kind predicts what its definition says, from the same ReplicaModel.
TEST(ValidationTest, KindsByDefinition) {
  const std::string csv = absl::StrCat(
      kHeader,
      "d,fit,decode_tps,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,,1,256,256,"
      "offline,100,x\n"
      "i,fit,itl_ms,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,,1,256,256,"
      "offline,10,x\n"
      "t,fit,ttft_ms,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,,1,256,1,"
      "server,20,x\n"
      "s,holdout,static_tps_per_gpu,llama-3.1-8b,h100-80gb-sxm,2,bf16,bf16,,"
      "64,128,128,offline,1000,x\n");
  absl::StatusOr<std::vector<Measurement>> rows =
      ParseMeasurements(csv, "f.csv");
  ASSERT_TRUE(rows.ok()) << rows.status();
  const EngineTuning tuning;
  absl::StatusOr<ValidationReport> r =
      Validate(*rows, kPresets, DefaultCatalog(), tuning);
  ASSERT_TRUE(r.ok()) << r.status();
  const Catalog catalog = DefaultCatalog();
  const GpuClass& h100 = *catalog.Find("h100-80gb-sxm");
  const ModelProfile m = *FindPreset("llama-3.1-8b");
  const ReplicaModel one(m, h100, 1, Precision::kBf16, Precision::kBf16,
                         tuning);
  const double step = one.DecodeStepSeconds(1, 256 + 128);
  EXPECT_DOUBLE_EQ(r->rows[0].predicted, 1 / step);
  EXPECT_DOUBLE_EQ(r->rows[1].predicted, 1e3 * step);
  // A server row pays the request overhead on its first token.
  EXPECT_DOUBLE_EQ(r->rows[2].predicted, 1e3 * one.TtftSeconds(256));
  const ReplicaModel two(m, h100, 2, Precision::kBf16, Precision::kBf16,
                         tuning);
  EXPECT_DOUBLE_EQ(r->rows[3].predicted,
                   64.0 * 128 / two.StaticBatchSeconds(64, 128, 128) / 2);
  EXPECT_DOUBLE_EQ(r->rows[0].error, r->rows[0].predicted / 100 - 1);
  // Groups per split, and "all".
  int groups = 0;
  for (const GroupSummary& g : r->groups) {
    if (g.split == "fit" && g.group == "all") {
      EXPECT_EQ(g.rows, 3);
      ++groups;
    }
    if (g.split == "holdout" && g.group == "batch") {
      EXPECT_EQ(g.rows, 1);
      ++groups;
    }
  }
  EXPECT_EQ(groups, 2);
}

// The fit recovers a tuning that generated the "measurements": rows made by
// the model at known efficiencies, fitted from the defaults, come back
// within a percent of what made them.
TEST(ValidationTest, FitRecoversAKnownTuning) {
  EngineTuning truth;
  truth.memory_bandwidth_utilization = 0.70;
  truth.model_flops_utilization = 0.50;
  truth.step_overhead = absl::Microseconds(300);
  std::string csv = kHeader;
  int n = 0;
  for (const char* gpu : {"a100-80gb", "l40s", "h100-80gb-sxm"}) {
    for (int prompt : {128, 4096}) {
      absl::StrAppend(&csv, "d", n++, ",fit,decode_tps,llama-3.1-8b,", gpu,
                      ",1,bf16,bf16,,1,", prompt, ",128,offline,1,x\n");
      absl::StrAppend(&csv, "t", n++, ",fit,ttft_ms,llama-3.1-8b,", gpu,
                      ",1,bf16,bf16,,1,", prompt, ",1,offline,1,x\n");
    }
  }
  absl::StatusOr<std::vector<Measurement>> rows =
      ParseMeasurements(csv, "f.csv");
  ASSERT_TRUE(rows.ok()) << rows.status();
  // Replace each placeholder with what `truth` predicts.
  absl::StatusOr<ValidationReport> made =
      Validate(*rows, kPresets, DefaultCatalog(), truth);
  ASSERT_TRUE(made.ok());
  for (size_t i = 0; i < rows->size(); ++i) {
    (*rows)[i].measured = made->rows[i].predicted;
  }
  absl::StatusOr<FitResult> fit =
      FitTuning(*rows, kPresets, DefaultCatalog(), EngineTuning{});
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_GT(fit->before, 0.05);
  EXPECT_LT(fit->after, 0.01);
  EXPECT_LT(fit->after, fit->before);
}

}  // namespace
}  // namespace pilotlight::model
