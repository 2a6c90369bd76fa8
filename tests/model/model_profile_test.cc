#include "controller/model/model_profile.h"

#include <string>

#include "controller/model/sizing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::model {
namespace {

using ::testing::HasSubstr;

// Every preset the docs promise exists and passes validation.
TEST(ModelProfileTest, PresetsAreValid) {
  for (const char* name :
       {"llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b",
        "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b",
        "qwen2.5-32b", "qwen2.5-72b", "gemma-2-9b", "gemma-2-27b"}) {
    absl::StatusOr<ModelProfile> m = FindPreset(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_TRUE(ValidateProfile(*m).ok()) << name << ValidateProfile(*m);
    EXPECT_FALSE(m->source.empty()) << name;
  }
  EXPECT_EQ(Presets().size(), 17u);
}

// KV bytes per token computed by hand (2 x layers x kv_heads x head_dim x
// bytes per element) and weights.
TEST(ModelProfileTest, KvAndWeightsByHand) {
  struct Row {
    const char* model;
    Precision weights;
    Precision kv;
    double weights_bytes;
    double kv_bytes_per_token;
  };
  const Row rows[] = {
      // 2 x 32 layers x 8 heads x 128 x 2 B = 131072 B = 128 KiB.
      {"llama-3.1-8b", Precision::kBf16, Precision::kBf16, 16.06e9, 131072},
      // fp8 halves the KV, and every weight but the output projection
      // (128256 x 4096, kept at 16 bits): (8.03e9 - 525.3e6) x 1 +
      // 525.3e6 x 2.
      {"llama-3.1-8b", Precision::kFp8, Precision::kFp8, 8.5553e9, 65536},
      // 2 x 80 x 8 x 128 x 2 = 327680 B = 320 KiB.
      {"llama-3.1-70b", Precision::kBf16, Precision::kBf16, 141.108e9, 327680},
      // int4 with a 16-bit scale and zero per 128 weights: 0.53125 B each,
      // the 128256 x 8192 output projection at 2 B.
      {"llama-3.1-70b", Precision::kInt4, Precision::kBf16, 39.025e9, 327680},
      // Gemma-2-9B: 2 x 42 x 8 x 256 x 2 = 344064 B.
      {"gemma-2-9b", Precision::kBf16, Precision::kBf16, 18.484e9, 344064},
      // Qwen2.5-7B: 2 x 28 x 4 x 128 x 2 = 57344 B.
      {"qwen2.5-7b", Precision::kBf16, Precision::kFp8, 15.232e9, 28672},
  };
  for (const Row& r : rows) {
    const ModelProfile m = *FindPreset(r.model);
    EXPECT_NEAR(WeightBytes(m, r.weights), r.weights_bytes, 1e6) << r.model;
    EXPECT_DOUBLE_EQ(KvBytesPerToken(m, r.kv), r.kv_bytes_per_token) << r.model;
  }
}

// A Hugging Face config.json gives any model's shapes; parameters are counted
// from them: Llama-3.1-8B's config gives its 8.03e9, Mixtral's its 46.7e9
// total and 12.9e9 active, GPT-J's (2-matrix GELU MLP, one head dim of
// 256, no GQA) its 6.05e9.
TEST(ModelProfileTest, FromHuggingFaceConfig) {
  absl::StatusOr<ModelProfile> llama = ProfileFromHfConfig(
      R"({"num_hidden_layers": 32, "hidden_size": 4096,
          "num_attention_heads": 32, "num_key_value_heads": 8,
          "intermediate_size": 14336, "vocab_size": 128256,
          "max_position_embeddings": 131072, "hidden_act": "silu",
          "tie_word_embeddings": false})",
      "llama");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_NEAR(llama->params, 8.03e9, 0.01e9);
  EXPECT_EQ(llama->head_dim, 128);
  EXPECT_EQ(llama->kv_heads, 8);
  EXPECT_DOUBLE_EQ(KvBytesPerToken(*llama, Precision::kBf16), 131072);

  absl::StatusOr<ModelProfile> mixtral = ProfileFromHfConfig(
      R"({"num_hidden_layers": 32, "hidden_size": 4096,
          "num_attention_heads": 32, "num_key_value_heads": 8,
          "intermediate_size": 14336, "vocab_size": 32000,
          "num_local_experts": 8, "num_experts_per_tok": 2,
          "max_position_embeddings": 32768})",
      "mixtral");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status();
  EXPECT_NEAR(mixtral->params, 46.7e9, 0.1e9);
  EXPECT_NEAR(mixtral->active_params, 12.9e9, 0.1e9);
  EXPECT_TRUE(mixtral->is_moe());

  absl::StatusOr<ModelProfile> gptj = ProfileFromHfConfig(
      R"({"n_layer": 28, "n_embd": 4096, "n_head": 16, "n_positions": 2048,
          "vocab_size": 50400, "activation_function": "gelu_new",
          "rotary_dim": 64})",
      "gpt-j");
  ASSERT_TRUE(gptj.ok()) << gptj.status();
  EXPECT_NEAR(gptj->params, 6.05e9, 0.05e9);
  EXPECT_EQ(gptj->kv_heads, 16);
  EXPECT_EQ(gptj->head_dim, 256);

  EXPECT_FALSE(ProfileFromHfConfig("[1, 2]", "x").ok());
  absl::StatusOr<ModelProfile> missing =
      ProfileFromHfConfig(R"({"hidden_size": 4096})", "x");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("num_hidden_layers"));
}

// Mixtral is MoE: 46.7B total, 12.9B active, top-2 of 8.
TEST(ModelProfileTest, MixtralIsMoe) {
  const ModelProfile m = *FindPreset("mixtral-8x7b");
  EXPECT_TRUE(m.is_moe());
  EXPECT_NEAR(m.params, 46.7e9, 0.1e9);
  EXPECT_NEAR(m.active_params, 12.9e9, 0.1e9);
  EXPECT_EQ(m.experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
}

// Unknown names list the presets; names are case-insensitive.
TEST(ModelProfileTest, Lookup) {
  EXPECT_TRUE(FindPreset("Llama-3.1-8B").ok());
  absl::StatusOr<ModelProfile> m = FindPreset("llama-9");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("known: llama-3.2-1b, llama-3.2-3b"));
}

// Impossible custom profiles name the field and the range.
TEST(ModelProfileTest, ValidationNamesTheField) {
  const ModelProfile good = *FindPreset("mistral-7b");
  struct Row {
    const char* what;
    void (*mutate)(ModelProfile&);
    const char* expect;
  };
  const Row rows[] = {
      {"zero params", [](ModelProfile& m) { m.params = 0; }, "params = 0"},
      {"negative layers", [](ModelProfile& m) { m.layers = -1; },
       "layers = -1 is invalid (1..1000)"},
      {"kv heads do not divide", [](ModelProfile& m) { m.kv_heads = 5; },
       "kv_heads = 5"},
      {"active above total",
       [](ModelProfile& m) { m.active_params = 2 * m.params; },
       "active_params"},
      {"moe top-k too large",
       [](ModelProfile& m) {
         m.experts = 4;
         m.experts_per_token = 4;
         m.active_params = m.params / 2;
       },
       "experts_per_token = 4"},
      {"zero context", [](ModelProfile& m) { m.max_context_tokens = 0; },
       "max_context_tokens = 0"},
  };
  for (const Row& r : rows) {
    ModelProfile m = good;
    r.mutate(m);
    absl::Status s = ValidateProfile(m);
    ASSERT_FALSE(s.ok()) << r.what;
    EXPECT_THAT(std::string(s.message()), HasSubstr(r.expect)) << r.what;
  }
}

}  // namespace
}  // namespace pilotlight::model
