// Numeric precisions for model weights and the KV cache, and what each costs
// in bytes. Pure value code: no I/O.
#pragma once

#include <array>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pilotlight::model {

// Precision
//
// The storage format of weights or KV-cache entries. For weights, kFp8 and
// kInt8 mean W8A8 (8-bit tensor cores do the math, so the GPU must have them);
// kInt4 means weight-only quantisation (W4A16: weights are unpacked to 16 bits
// for the math, so any GPU runs it, but compute is at the 16-bit rate). kFp4
// is NVFP4 (W4A4: 4-bit elements with an FP8 scale per 16, on FP4 tensor
// cores, so the GPU must have them: Blackwell).
enum class Precision { kBf16, kFp16, kFp8, kInt8, kInt4, kFp4 };

inline constexpr std::array<Precision, 6> kAllPrecisions = {
    Precision::kBf16, Precision::kFp16, Precision::kFp8,
    Precision::kInt8, Precision::kInt4, Precision::kFp4};

// Bytes one element occupies: 2, 2, 1, 1, 0.5, 0.5.
double BytesPerElement(Precision p);

// Bytes one weight occupies in memory, its share of the quantisation scales
// included: 4-bit integer weights carry a 16-bit scale and a 16-bit zero
// point per group of `int4_group_size` (AWQ and GPTQ; 128 by default, so
// 0.5 + 4/128 = 0.53125 bytes); NVFP4 one 8-bit scale per 16 elements
// (0.5 + 1/16 = 0.5625); 8-bit formats a per-channel scale (negligible).
double WeightBytesPerParam(Precision p, int int4_group_size = 128);

// "bf16", "fp16", "fp8", "int8", "int4", "fp4".
absl::string_view PrecisionName(Precision p);

// Parses a name as printed by PrecisionName (case-insensitive; "float16" and
// "bfloat16" are accepted too). The error lists the accepted names.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);

}  // namespace pilotlight::model
