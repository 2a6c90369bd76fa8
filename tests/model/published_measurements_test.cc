// Holds the sizing model's decode predictions against published measurements
// (testdata/published_decode.yaml, each row citing its source).
//
// Tolerance: every row within +-25 %, and the mean absolute error within
// 12 %. Why these bounds: the model uses one memory-bandwidth utilisation
// (0.75) for every engine and GPU, while published decode runs reach 60-85 %
// of peak bandwidth in the published runs this file holds, i.e. -20 % to
// +13 % around our factor; benchmark harnesses add their own scheduling and
// prompt-mix effects on top. A model error beyond 25 % on any row would mean a
// wrong formula, not a tuning difference -- and the mean bound keeps the
// model from being merely inside the band by luck on each side.
#include <cmath>
#include <iostream>
#include <string>

#include "absl/strings/str_format.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/sizing.h"
#include "gtest/gtest.h"
#include "tests/files.h"
#include "yaml-cpp/yaml.h"

namespace pilotlight::model {
namespace {

using testutil::ReadFile;

const GpuClass* FindGpu(const Catalog& product, const Catalog& extra,
                        const std::string& name) {
  if (const GpuClass* g = product.Find(name)) {
    return g;
  }
  return extra.Find(name);
}

TEST(PublishedMeasurementsTest, DecodeWithinTolerance) {
  const std::string dir = "tests/model/testdata/";
  absl::StatusOr<Catalog> product = Catalog::Default();
  ASSERT_TRUE(product.ok()) << product.status();
  absl::StatusOr<Catalog> extra = Catalog::FromYaml(
      ReadFile(dir + "published_gpus.yaml"), "published_gpus.yaml");
  ASSERT_TRUE(extra.ok()) << extra.status();
  const YAML::Node doc = YAML::LoadFile(dir + "published_decode.yaml");
  const YAML::Node rows = doc["measurements"];
  ASSERT_TRUE(rows && rows.IsSequence());
  ASSERT_GE(rows.size(), 5u) << "the issue asks for at least five";

  const EngineTuning tuning;
  double sum_abs_error = 0;
  std::cout << absl::StrFormat("%-14s %-14s %-5s %4s %-10s %9s %9s %7s\n",
                               "model", "gpu", "prec", "conc", "kind",
                               "measured", "predicted", "error");
  for (const YAML::Node& row : rows) {
    const std::string model_name = row["model"].as<std::string>();
    const std::string gpu_name = row["gpu"].as<std::string>();
    const ModelProfile m = *FindPreset(model_name);
    const GpuClass* gpu = FindGpu(*product, *extra, gpu_name);
    ASSERT_NE(gpu, nullptr) << gpu_name;
    const Precision p = *ParsePrecision(row["precision"].as<std::string>());
    Workload w;
    w.concurrency = row["concurrency"].as<int>();
    w.prompt_tokens = row["prompt"].as<int>();
    w.output_tokens = row["output"].as<int>();
    w.context_tokens = w.prompt_tokens + w.output_tokens;
    const ReplicaModel replica(m, *gpu, 1, p, p, tuning);
    ASSERT_GE(replica.KvSequences(w.context_tokens), w.concurrency)
        << model_name << " on " << gpu_name;
    const std::string kind = row["kind"].as<std::string>();
    const double tpot = replica.TpotSeconds(w.concurrency, w);
    double predicted = 0;
    if (kind == "decode") {
      predicted = 1.0 / tpot;
    } else {
      ASSERT_EQ(kind, "throughput");
      // A closed loop: each client waits for its first token, then decodes
      // the rest of its output at the loaded TPOT.
      const double per_request =
          replica.TtftSeconds(w.prompt_tokens) + (w.output_tokens - 1) * tpot;
      predicted = w.concurrency * w.output_tokens / per_request;
    }
    const double measured = row["tokens_per_s"].as<double>();
    const double error = predicted / measured - 1.0;
    sum_abs_error += std::abs(error);
    std::cout << absl::StrFormat(
        "%-14s %-14s %-5s %4d %-10s %9.1f %9.1f %+6.1f%%\n", model_name,
        gpu_name, PrecisionName(p), w.concurrency, kind, measured, predicted,
        100 * error);
    EXPECT_LE(std::abs(error), 0.25)
        << model_name << " on " << gpu_name << " at " << w.concurrency
        << ": measured " << measured << ", predicted " << predicted << " ("
        << row["source"].as<std::string>() << ")";
  }
  const double mean = sum_abs_error / static_cast<double>(rows.size());
  std::cout << absl::StrFormat("mean absolute error %.1f%% over %zu rows\n",
                               100 * mean, rows.size());
  EXPECT_LE(mean, 0.12);
}

}  // namespace
}  // namespace pilotlight::model
