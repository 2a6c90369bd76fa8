#include "controller/model/model_profile.h"

#include <array>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace pilotlight::model {
namespace {

// Architecture figures are those of each model's Hugging Face config.json
// (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads,
// head_dim, vocab_size, max_position_embeddings) and parameter counts from
// the model cards; they were written from memory of those files, not copied
// from a stored source, and are checked against figures derived by hand
// (KV bytes/token = 2 x layers x kv_heads x head_dim x bytes: 128 KiB for
// Llama-3.1-8B, 320 KiB for Llama-3.1-70B at bf16) by
// tests/model/model_profile_test.cc.
ModelProfile Dense(std::string name, double params, int layers, int hidden,
                   int heads, int kv_heads, int head_dim, int vocab, int ctx,
                   std::string source) {
  ModelProfile m;
  m.name = std::move(name);
  m.params = params;
  m.active_params = params;
  m.layers = layers;
  m.hidden_size = hidden;
  m.attention_heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = head_dim;
  m.vocab_size = vocab;
  m.max_context_tokens = ctx;
  m.source = std::move(source);
  return m;
}

const std::array<ModelProfile, 17>& PresetTable() {
  static const std::array<ModelProfile, 17>* table = [] {
    auto* t = new std::array<ModelProfile, 17>{
        Dense("llama-3.2-1b", 1.236e9, 16, 2048, 32, 8, 64, 128256, 131072,
              "meta-llama/Llama-3.2-1B config.json (memory)"),
        Dense("llama-3.2-3b", 3.213e9, 28, 3072, 24, 8, 128, 128256, 131072,
              "meta-llama/Llama-3.2-3B config.json (memory)"),
        Dense("llama-3.1-8b", 8.030e9, 32, 4096, 32, 8, 128, 128256, 131072,
              "meta-llama/Llama-3.1-8B config.json (memory)"),
        Dense("llama-3.1-70b", 70.554e9, 80, 8192, 64, 8, 128, 128256, 131072,
              "meta-llama/Llama-3.1-70B config.json (memory)"),
        Dense("llama-3.1-405b", 405.853e9, 126, 16384, 128, 8, 128, 128256,
              131072, "meta-llama/Llama-3.1-405B config.json (memory)"),
        Dense("mistral-7b", 7.248e9, 32, 4096, 32, 8, 128, 32768, 32768,
              "mistralai/Mistral-7B-v0.3 config.json (memory)"),
        Dense("mixtral-8x7b", 46.703e9, 32, 4096, 32, 8, 128, 32000, 32768,
              "mistralai/Mixtral-8x7B-v0.1 config.json; 12.9B active "
              "(memory)"),
        Dense("qwen2.5-7b", 7.616e9, 28, 3584, 28, 4, 128, 152064, 32768,
              "Qwen/Qwen2.5-7B config.json (memory)"),
        Dense("qwen2.5-32b", 32.764e9, 64, 5120, 40, 8, 128, 152064, 32768,
              "Qwen/Qwen2.5-32B config.json (memory)"),
        Dense("qwen2.5-72b", 72.706e9, 80, 8192, 64, 8, 128, 152064, 32768,
              "Qwen/Qwen2.5-72B config.json (memory)"),
        Dense("gemma-2-9b", 9.242e9, 42, 3584, 16, 8, 256, 256000, 8192,
              "google/gemma-2-9b config.json (memory)"),
        Dense("gemma-2-27b", 27.227e9, 46, 4608, 32, 16, 128, 256000, 8192,
              "google/gemma-2-27b config.json (memory)"),
        // Older shapes that published measurements use
        // (controller/model/data/measurements.csv).
        Dense("llama-2-7b", 6.738e9, 32, 4096, 32, 32, 128, 32000, 4096,
              "meta-llama/Llama-2-7b-hf config.json (memory)"),
        Dense("llama-2-13b", 13.016e9, 40, 5120, 40, 40, 128, 32000, 4096,
              "meta-llama/Llama-2-13b-hf config.json (memory)"),
        Dense("llama-2-70b", 68.977e9, 80, 8192, 64, 8, 128, 32000, 4096,
              "meta-llama/Llama-2-70b-hf config.json (memory)"),
        Dense("codellama-34b", 33.744e9, 48, 8192, 64, 8, 128, 32000, 16384,
              "codellama/CodeLlama-34b-hf config.json (memory)"),
        Dense("gpt-j-6b", 6.053e9, 28, 4096, 16, 16, 256, 50400, 2048,
              "EleutherAI/gpt-j-6b config.json (memory)"),
    };
    ModelProfile& mixtral = (*t)[6];
    mixtral.active_params = 12.879e9;
    mixtral.experts = 8;
    mixtral.experts_per_token = 2;
    return t;
  }();
  return *table;
}

absl::Status Bad(absl::string_view name, absl::string_view field, double value,
                 absl::string_view allowed) {
  return absl::InvalidArgumentError(absl::StrCat("model ", name, ": ", field,
                                                 " = ", value, " is invalid (",
                                                 allowed, ")"));
}

}  // namespace

std::span<const ModelProfile> Presets() { return PresetTable(); }

absl::StatusOr<ModelProfile> FindPreset(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const ModelProfile& m : Presets()) {
    if (m.name == lower) {
      return m;
    }
  }
  return absl::NotFoundError(absl::StrCat("unknown model \"", name,
                                          "\" (known: ", PresetNames(),
                                          "; or --model custom with "
                                          "--params/--layers/..., or "
                                          "--model-config config.json)"));
}

std::string PresetNames() {
  return absl::StrJoin(
      Presets(), ", ",
      [](std::string* out, const ModelProfile& m) { out->append(m.name); });
}

namespace {

using nlohmann::json;

// The first of `keys` that the config holds as a number; `fallback` when
// none does (< 0: required).
absl::StatusOr<double> ConfigNumber(const json& doc, absl::string_view name,
                                    std::initializer_list<const char*> keys,
                                    double fallback) {
  for (const char* k : keys) {
    auto it = doc.find(k);
    if (it != doc.end() && it->is_number()) {
      return it->get<double>();
    }
  }
  if (fallback < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": config.json has no number \"", *keys.begin(), "\""));
  }
  return fallback;
}

bool ConfigFlag(const json& doc, const char* key) {
  return doc.contains(key) && doc[key].is_boolean() && doc[key].get<bool>();
}

// Whether the MLP is gated (three matrices: SwiGLU, GeGLU) by its
// activation; SiLU when the config names none.
bool GatedMlp(const json& doc) {
  std::string act = "silu";
  for (const char* k : {"hidden_act", "activation_function"}) {
    if (doc.contains(k) && doc[k].is_string()) {
      act = absl::AsciiStrToLower(doc[k].get<std::string>());
      break;
    }
  }
  return act.find("silu") != std::string::npos ||
         act.find("swiglu") != std::string::npos ||
         act.find("swish") != std::string::npos ||
         act.find("geglu") != std::string::npos ||
         act.find("gelu_pytorch_tanh") != std::string::npos;
}

// Total and per-token parameters from the shapes: embeddings (tied or
// not), attention, and the MLP of every layer (of its routed experts, for
// the per-token count of a mixture of experts).
void CountParams(const json& doc, double intermediate,
                 double expert_intermediate, ModelProfile& m) {
  const double matrices = GatedMlp(doc) ? 3.0 : 2.0;
  const double h = m.hidden_size;
  const double q_dim = static_cast<double>(m.attention_heads) * m.head_dim;
  const double kv_dim = static_cast<double>(m.kv_heads) * m.head_dim;
  const double attention = h * q_dim + 2.0 * h * kv_dim + q_dim * h;
  const double embeddings =
      (ConfigFlag(doc, "tie_word_embeddings") ? 1.0 : 2.0) * m.vocab_size * h;
  if (m.experts > 0) {
    const double expert = matrices * h * expert_intermediate;
    m.params = embeddings + m.layers * (attention + m.experts * expert);
    m.active_params =
        embeddings + m.layers * (attention + m.experts_per_token * expert);
  } else {
    m.params =
        embeddings + m.layers * (attention + matrices * h * intermediate);
    m.active_params = m.params;
  }
}

}  // namespace

absl::StatusOr<ModelProfile> ProfileFromHfConfig(absl::string_view json_text,
                                                 absl::string_view name) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name,
                     ": not a JSON object (expected a Hugging Face "
                     "config.json)"));
  }
  const auto number = [&](std::initializer_list<const char*> keys,
                          double fallback) {
    return ConfigNumber(doc, name, keys, fallback);
  };
  ModelProfile m;
  m.name = std::string(name);
  m.source = absl::StrCat(name, " (Hugging Face config.json)");
  absl::StatusOr<double> layers = number({"num_hidden_layers", "n_layer"}, -1);
  absl::StatusOr<double> hidden = number({"hidden_size", "n_embd"}, -1);
  absl::StatusOr<double> heads = number({"num_attention_heads", "n_head"}, -1);
  absl::StatusOr<double> vocab = number({"vocab_size"}, -1);
  for (const absl::StatusOr<double>* v : {&layers, &hidden, &heads, &vocab}) {
    if (!v->ok()) {
      return v->status();
    }
  }
  m.layers = static_cast<int>(*layers);
  m.hidden_size = static_cast<int>(*hidden);
  m.attention_heads = static_cast<int>(*heads);
  m.vocab_size = static_cast<int>(*vocab);
  m.kv_heads = static_cast<int>(*number(
      {"num_key_value_heads", "num_kv_heads"},
      ConfigFlag(doc, "multi_query") ? 1.0
                                     : static_cast<double>(m.attention_heads)));
  // Heads split the hidden size evenly: an integer head dimension.
  const int split_head_dim =
      m.attention_heads > 0 ? m.hidden_size / m.attention_heads : 0;
  m.head_dim = static_cast<int>(*number({"head_dim"}, split_head_dim));
  m.max_context_tokens = static_cast<int>(
      *number({"max_position_embeddings", "n_positions"}, 4096));
  const double intermediate =
      *number({"intermediate_size", "n_inner", "ffn_dim"}, 4.0 * m.hidden_size);
  m.experts = static_cast<int>(
      *number({"num_local_experts", "num_experts", "n_routed_experts"}, 0));
  m.experts_per_token =
      m.experts > 0 ? static_cast<int>(*number({"num_experts_per_tok"}, 2)) : 0;
  CountParams(doc, intermediate,
              *number({"moe_intermediate_size"}, intermediate), m);
  if (absl::Status s = ValidateProfile(m); !s.ok()) {
    return s;
  }
  return m;
}

absl::Status ValidateProfile(const ModelProfile& m) {
  const std::string n = m.name.empty() ? "custom" : m.name;
  if (!std::isfinite(m.params) || m.params <= 0 || m.params > 1e14) {
    return Bad(n, "params", m.params, "must be > 0 and <= 1e14");
  }
  if (!std::isfinite(m.active_params) || m.active_params <= 0 ||
      m.active_params > m.params) {
    return Bad(n, "active_params", m.active_params,
               "must be > 0 and <= params");
  }
  struct IntCheck {
    const char* field;
    int value;
    int min;
    int max;
  };
  const IntCheck checks[] = {
      {"layers", m.layers, 1, 1000},
      {"hidden_size", m.hidden_size, 1, 1 << 20},
      {"attention_heads", m.attention_heads, 1, 4096},
      {"kv_heads", m.kv_heads, 1, 4096},
      {"head_dim", m.head_dim, 1, 4096},
      {"vocab_size", m.vocab_size, 1, 10'000'000},
      {"max_context_tokens", m.max_context_tokens, 1, 100'000'000},
  };
  for (const IntCheck& c : checks) {
    if (c.value < c.min || c.value > c.max) {
      return Bad(n, c.field, c.value, absl::StrCat(c.min, "..", c.max));
    }
  }
  if (m.kv_heads > m.attention_heads || m.attention_heads % m.kv_heads != 0) {
    return Bad(
        n, "kv_heads", m.kv_heads,
        absl::StrCat("must divide attention_heads = ", m.attention_heads));
  }
  if (m.experts != 0 || m.experts_per_token != 0) {
    if (m.experts < 2 || m.experts_per_token < 1 ||
        m.experts_per_token >= m.experts) {
      return Bad(n, "experts_per_token", m.experts_per_token,
                 absl::StrCat("MoE needs experts >= 2 and 1 <= top-k < "
                              "experts; experts = ",
                              m.experts));
    }
    if (m.active_params >= m.params) {
      return Bad(n, "active_params", m.active_params,
                 "an MoE model activates fewer parameters than it has");
    }
  }
  return absl::OkStatus();
}

}  // namespace pilotlight::model
