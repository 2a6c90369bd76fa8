// ModelProfile: the architecture figures of a decoder-only transformer that
// the sizing model needs, plus presets for common open models. Pure values.
//
// Example:
//   absl::StatusOr<ModelProfile> m = FindPreset("llama-3.1-8b");
#pragma once

#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pilotlight::model {

struct ModelProfile {
  std::string name;
  double params = 0;         // total parameters (all experts for MoE)
  double active_params = 0;  // parameters used per token (== params if dense)
  int layers = 0;
  int hidden_size = 0;
  int attention_heads = 0;  // query heads
  int kv_heads = 0;         // key/value heads (GQA/MQA: fewer than query)
  int head_dim = 0;
  int vocab_size = 0;
  int max_context_tokens = 0;
  int experts = 0;            // MoE experts per layer; 0 = dense
  int experts_per_token = 0;  // MoE top-k
  std::string source;

  bool is_moe() const { return experts > 0; }
};

// The built-in presets, in a stable order.
std::span<const ModelProfile> Presets();

// A preset by name (case-insensitive). NotFound lists the known names.
absl::StatusOr<ModelProfile> FindPreset(absl::string_view name);

// "llama-3.2-1b, llama-3.2-3b, ..."
std::string PresetNames();

// A profile from a Hugging Face config.json, so that any public model can be
// sized: num_hidden_layers (n_layer), hidden_size (n_embd),
// num_attention_heads (n_head), num_key_value_heads (default: the attention
// heads; multi_query: 1), head_dim (default hidden / heads), vocab_size,
// max_position_embeddings (n_positions), intermediate_size (n_inner, default
// 4 x hidden), and for MoE num_local_experts / num_experts /
// n_routed_experts with num_experts_per_tok (moe_intermediate_size).
// Parameters are counted from the shapes: embeddings (twice unless
// tie_word_embeddings), attention q/k/v/o, and the MLP -- gated (3 matrices)
// for SiLU-family activations, else 2 -- per expert for MoE; norms and biases
// are left out (< 0.1 %). `name` names the profile.
absl::StatusOr<ModelProfile> ProfileFromHfConfig(absl::string_view json_text,
                                                 absl::string_view name);

// Checks a profile's numbers (all used by the formulas); the error names the
// field, the value and the allowed range.
absl::Status ValidateProfile(const ModelProfile& m);

}  // namespace pilotlight::model
