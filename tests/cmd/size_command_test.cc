#include "controller/cmd/size_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/model/sizing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pilotlight::cmd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun Size(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunSize(args, out, err);
  return {code, out.str(), err.str()};
}

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) {
    keys.insert(it.key());
  }
  return keys;
}

// --json prints one object with exactly the documented keys.
TEST(SizeCommandTest, JsonHasExactlyTheDocumentedKeys) {
  const CliRun r =
      Size({"--model", "llama-3.1-70b", "--concurrency", "16", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(Keys(j),
            (std::set<std::string>{"model", "options", "recommendation"}));
  EXPECT_EQ(Keys(j["model"]),
            (std::set<std::string>{"name", "params", "weights_bytes",
                                   "kv_bytes_per_token"}));
  EXPECT_EQ(j["model"]["name"], "llama-3.1-70b");
  EXPECT_DOUBLE_EQ(j["model"]["kv_bytes_per_token"].get<double>(), 327680);
  EXPECT_TRUE(j["model"]["weights_bytes"].is_number());
  ASSERT_FALSE(j["options"].empty());
  for (const nlohmann::json& o : j["options"]) {
    EXPECT_EQ(Keys(o), (std::set<std::string>{
                           "gpu_class", "tensor_parallel", "fits",
                           "max_concurrency", "decode_tokens_per_s", "ttft_s",
                           "tpot_s", "price_per_hour", "usd_per_million_tokens",
                           "meets_slo", "reason", "cold_start_s", "wake_s",
                           "sleeping_per_gpu", "asleep_price_per_hour"}));
  }
  EXPECT_EQ(Keys(j["recommendation"]),
            (std::set<std::string>{"gpu_class", "tensor_parallel"}));
  EXPECT_GE(j["recommendation"]["tensor_parallel"].get<int>(), 1);
}

// No recommendation: JSON null and exit code 3.
TEST(SizeCommandTest, NoRecommendationIsNullAndExit3) {
  const CliRun r =
      Size({"--model", "llama-3.1-405b", "--class", "a100-80gb", "--json"});
  EXPECT_EQ(r.code, kExitNoOption);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["recommendation"].is_null());
  EXPECT_FALSE(j["options"][0]["fits"].get<bool>());
}

// The table shows one row per class and the recommendation line.
TEST(SizeCommandTest, TableIsReadable) {
  const CliRun r = Size({"--model", "llama-3.1-8b", "--concurrency", "32"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("llama-3.1-8b: bf16 weights, bf16 KV cache"));
  EXPECT_THAT(r.out, HasSubstr("CLASS"));
  EXPECT_THAT(r.out, HasSubstr("recommended:"));
  EXPECT_THAT(r.out, HasSubstr("unsupported: T4-16GB has no bf16"));
  EXPECT_THAT(r.out, HasSubstr("meets SLO: costs $"));
  const CliRun all = Size({"--model", "llama-3.1-8b", "--all"});
  EXPECT_GT(std::count(all.out.begin(), all.out.end(), '\n'),
            std::count(r.out.begin(), r.out.end(), '\n'));
}

// A custom model from explicit numbers.
TEST(SizeCommandTest, CustomModel) {
  const CliRun r = Size({"--model", "custom", "--params", "7e9", "--layers",
                         "32", "--hidden", "4096", "--heads", "32",
                         "--kv-heads", "8", "--vocab", "32000", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["name"], "custom");
  EXPECT_DOUBLE_EQ(j["model"]["kv_bytes_per_token"].get<double>(), 131072);
  const CliRun missing = Size({"--model", "custom", "--params", "7e9"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_THAT(missing.err, HasSubstr("--model custom needs --layers"));
}

// A user catalog file replaces the built-in one; a broken one is a usage
// error naming the file.
TEST(SizeCommandTest, CatalogFile) {
  const std::string path = ::testing::TempDir() + "/catalog.yaml";
  {
    std::ofstream f(path);
    f << "kind: GPUCatalog\nclasses:\n- name: mine\n"
         "  gpu: {model: M, memoryGiB: 80, bandwidthGBps: 2000, fp16TFLOPS: "
         "500}\n"
         "  interconnect: {kind: NVLink, GBps: 300}\n  hostLinkGBps: 32\n"
         "  pricePerGPUHour: {onDemand: 2}\n";
  }
  const CliRun r = Size({"--catalog", path, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["recommendation"]["gpu_class"],
            "mine");
  {
    std::ofstream f(path);
    f << "kind: GPUCatalog\nclasses:\n- name: mine\n  gpu: {model: M}\n";
  }
  const CliRun bad = Size({"--catalog", path});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr(path));
  EXPECT_THAT(bad.err, HasSubstr("missing field \"memoryGiB\""));
  const CliRun missing = Size({"--catalog", "/nonexistent/catalog.yaml"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_THAT(missing.err, HasSubstr("cannot open"));
  std::remove(path.c_str());
}

// --validate predicts a user's own measurements CSV (a model by preset name
// or by a config.json beside the CSV) and prints rows and summary; a bad
// row is a usage error naming its line.
TEST(SizeCommandTest, ValidateOwnMeasurements) {
  const std::string dir = ::testing::TempDir();
  {
    std::ofstream f(dir + "/tiny.json");
    f << R"({"num_hidden_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8,
            "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 131072, "hidden_act": "silu"})";
  }
  const std::string csv = dir + "/mine.csv";
  {
    std::ofstream f(csv);
    f << "# my runs\n"
         "id,split,kind,model,gpu,tp,weights,kv,batch,prompt,output,path,"
         "measured,source\n"
         "a,holdout,decode_tps,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,1,"
         "256,256,server,150,\"[me] a run, with a comma\"\n"
         "b,holdout,ttft_ms,tiny.json,h100-80gb-sxm,1,bf16,bf16,1,2048,1,"
         "offline,60,[me] prefill\n";
  }
  const CliRun r = Size({"--validate", csv});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("decode_tps"));
  EXPECT_THAT(r.out, HasSubstr("tiny.json"));
  EXPECT_THAT(r.out, HasSubstr("decode-b1  holdout     1"));
  EXPECT_THAT(r.out, HasSubstr("ttft       holdout     1"));

  const CliRun fit = Size({"--validate", csv, "--fit"});
  ASSERT_EQ(fit.code, kExitOk) << fit.err;
  EXPECT_THAT(fit.out, HasSubstr("fitted on 2 rows"));
  EXPECT_THAT(fit.out, HasSubstr("memory_bandwidth_utilization = "));

  const CliRun none = Size({"--validate", csv, "--split", "fit"});
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_THAT(none.err, HasSubstr("no rows of split fit"));
  const CliRun bad_split = Size({"--validate", csv, "--fit-on", "train"});
  EXPECT_EQ(bad_split.code, kExitUsage);
  EXPECT_THAT(bad_split.err, HasSubstr("--fit-on train: expected fit or"));
  {
    // Fitted on one split, judged on the other, in one run.
    std::ofstream f(csv);
    f << "id,split,kind,model,gpu,tp,weights,kv,batch,prompt,output,path,"
         "measured,source\n"
         "a,fit,decode_tps,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,1,"
         "256,256,server,150,[me] fitted\n"
         "b,holdout,ttft_ms,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,1,2048,1,"
         "offline,60,[me] judged\n";
  }
  const CliRun judged =
      Size({"--validate", csv, "--split", "holdout", "--fit-on", "fit"});
  ASSERT_EQ(judged.code, kExitOk) << judged.err;
  EXPECT_THAT(judged.out, HasSubstr("fitted on 1 rows"));
  EXPECT_THAT(judged.out, HasSubstr("ttft       holdout     1"));
  EXPECT_THAT(judged.out, Not(HasSubstr("decode_tps")));
  {
    std::ofstream f(csv);
    f << "id,split,kind,model,gpu,tp,weights,kv,batch,prompt,output,"
         "measured\n"
         "a,holdout,decode_tps,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,1,"
         "256,256,fast\n";
  }
  const CliRun bad = Size({"--validate", csv});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("mine.csv:2: measured = \"fast\""));
  std::remove(csv.c_str());
  std::remove((dir + "/tiny.json").c_str());
}

// --model-config sizes any public model from its config.json.
TEST(SizeCommandTest, ModelConfigFile) {
  const std::string dir = ::testing::TempDir() + "/my-model";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/config.json";
  {
    std::ofstream f(path);
    f << R"({"num_hidden_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8,
            "intermediate_size": 14336, "vocab_size": 128256,
            "max_position_embeddings": 131072})";
  }
  const CliRun r = Size({"--model-config", path, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["model"]["params"].get<double>(), 8.03e9, 0.01e9);
  EXPECT_EQ(j["model"]["name"], "my-model");  // the folder names it
  const CliRun both = Size({"--model-config", path, "--model", "mistral-7b"});
  EXPECT_EQ(both.code, kExitUsage);
  EXPECT_THAT(both.err, HasSubstr("give one"));
  std::remove(path.c_str());
}

// --calibration scales the classes it names for this model: a slower L4
// serves fewer tokens/s and is marked; a broken file is a usage error.
TEST(SizeCommandTest, CalibrationFile) {
  const std::string path = ::testing::TempDir() + "/calibration.yaml";
  {
    std::ofstream f(path);
    f << "kind: SizingCalibration\ncalibrations:\n"
         "- {model: llama-3.1-8b, gpuClass: l4, decodeScale: 1.6}\n"
         "- {model: mistral-7b, gpuClass: l40s, decodeScale: 3}\n";
  }
  const CliRun plain = Size({"--class", "l4", "--json"});
  const CliRun slow = Size({"--class", "l4", "--json", "--calibration", path});
  ASSERT_NE(plain.out, "") << plain.err;
  ASSERT_NE(slow.out, "") << slow.err;
  // One sequence at TP 1: a pure decode step, scaled by exactly 1.6.
  const nlohmann::json a = nlohmann::json::parse(plain.out)["options"][0];
  const nlohmann::json b = nlohmann::json::parse(slow.out)["options"][0];
  ASSERT_EQ(a["tensor_parallel"], 1);
  ASSERT_EQ(b["tensor_parallel"], 1);
  EXPECT_NEAR(b["tpot_s"].get<double>(), 1.6 * a["tpot_s"].get<double>(), 1e-9);
  EXPECT_LE(b["max_concurrency"].get<int>(), a["max_concurrency"].get<int>());
  const CliRun table = Size({"--class", "l4,l40s", "--calibration", path});
  EXPECT_THAT(table.out, HasSubstr("l4*"));
  EXPECT_THAT(table.out, Not(HasSubstr("l40s*")));  // mistral's, not ours
  {
    std::ofstream f(path);
    f << "calibrations:\n- {model: llama-3.1-8b}\n";
  }
  const CliRun bad = Size({"--calibration", path});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("needs \"model\" and \"gpuClass\""));
  std::remove(path.c_str());
}

// --save-tuning writes what --fit found and --tuning sizes with it: the
// rows judged again at the saved terms are predicted as the fit predicted
// them; a hand-written file moves the one term it names, and the term
// flags override the file.
TEST(SizeCommandTest, TuningFileFromAFit) {
  const std::string dir = ::testing::TempDir();
  const std::string csv = dir + "/lean.csv";
  const std::string saved = dir + "/lean-tuning.yaml";
  {
    std::ofstream f(csv);
    f << "id,split,kind,model,gpu,tp,weights,kv,batch,prompt,output,path,"
         "measured,source\n"
         "a,fit,decode_tps,llama-3.1-8b,h100-80gb-sxm,1,bf16,bf16,1,"
         "128,256,offline,210,[me] a lean engine\n"
         "b,fit,decode_tps,llama-3.1-8b,a100-80gb,1,bf16,bf16,1,"
         "128,256,offline,135,[me] the same on an A100\n";
  }
  const CliRun fit = Size({"--validate", csv, "--fit", "--save-tuning", saved});
  ASSERT_EQ(fit.code, kExitOk) << fit.err;
  EXPECT_THAT(fit.out, HasSubstr("fitted terms written to " + saved));
  std::ifstream in(saved);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("kind: SizingTuning\n"));
  const CliRun again = Size({"--validate", csv, "--tuning", saved});
  ASSERT_EQ(again.code, kExitOk) << again.err;
  // Each row's line, predicted value and error included, as the fit had it.
  for (const char* id : {"\na ", "\nb "}) {
    const size_t at_fit = fit.out.find(id);
    const size_t at_again = again.out.find(id);
    ASSERT_NE(at_fit, std::string::npos) << id;
    ASSERT_NE(at_again, std::string::npos) << id;
    EXPECT_EQ(fit.out.substr(at_fit, fit.out.find('\n', at_fit + 1) - at_fit),
              again.out.substr(at_again,
                               again.out.find('\n', at_again + 1) - at_again));
  }

  const std::string hand = dir + "/no-step-cost.yaml";
  {
    std::ofstream f(hand);
    f << "kind: SizingTuning\nstepOverhead: 0s\n";
  }
  auto tpot = [](const CliRun& r) {
    return nlohmann::json::parse(r.out)["options"][0]["tpot_s"].get<double>();
  };
  const CliRun plain = Size({"--class", "h100-80gb-sxm", "--json"});
  const CliRun lean =
      Size({"--class", "h100-80gb-sxm", "--json", "--tuning", hand});
  const CliRun lean_slow = Size(
      {"--class", "h100-80gb-sxm", "--json", "--tuning", hand, "--mbu", "0.5"});
  ASSERT_EQ(plain.code, kExitOk) << plain.err;
  ASSERT_EQ(lean.code, kExitOk) << lean.err;
  ASSERT_EQ(lean_slow.code, kExitOk) << lean_slow.err;
  // One sequence at TP 1: one decode step, less exactly the default step
  // cost (EngineTuning::step_overhead).
  EXPECT_NEAR(tpot(plain) - tpot(lean),
              absl::ToDoubleSeconds(model::EngineTuning{}.step_overhead), 1e-9);
  EXPECT_GT(tpot(lean_slow), tpot(lean));

  const CliRun unfitted = Size({"--validate", csv, "--save-tuning", saved});
  EXPECT_EQ(unfitted.code, kExitUsage);
  EXPECT_THAT(unfitted.err, HasSubstr("--save-tuning writes what --fit"));
  const CliRun missing = Size({"--tuning", dir + "/none.yaml"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_THAT(missing.err, HasSubstr("none.yaml: cannot open the file"));
  {
    std::ofstream f(hand);
    f << "kind: SizingTuning\nrooflineOverlap: 2\n";
  }
  const CliRun bad = Size({"--tuning", hand});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("tuning.roofline_overlap = 2"));
  for (const std::string& p : {csv, saved, hand}) {
    std::remove(p.c_str());
  }
}

// Usage errors exit 2 with a message naming what was wrong.
TEST(SizeCommandTest, UsageErrors) {
  struct Row {
    std::vector<std::string> args;
    const char* expect;
  };
  const Row rows[] = {
      {{"--model", "llama-9"},
       "unknown model \"llama-9\" (known: llama-3.2-1b"},
      {{"--class", "v100"}, "unknown GPU class \"v100\" (known: t4"},
      {{"--tpot", "0"}, "slo.tpot = 0 is out of range"},
      {{"--context", "-5"}, "context_tokens = -5 is out of range"},
      {{"--precision", "fp6"}, "unknown precision \"fp6\""},
      {{"--kv-precision", "int4"}, "is not a KV-cache format"},
      {{"--layers", "3"}, "--layers describes a custom model"},
      {{"--bogus"}, "unknown flag --bogus"},
  };
  for (const Row& row : rows) {
    const CliRun r = Size(row.args);
    EXPECT_EQ(r.code, kExitUsage) << row.expect;
    EXPECT_THAT(r.err, HasSubstr(row.expect));
    EXPECT_TRUE(r.out.empty());
  }
  const CliRun help = Size({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_THAT(help.out, HasSubstr("--kv-precision P"));
}

}  // namespace
}  // namespace pilotlight::cmd
