// File: controller/model/precision.h
//
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
// for the math, so any GPU runs it, but compute is at the 16-bit rate).
enum class Precision { kBf16, kFp16, kFp8, kInt8, kInt4 };

inline constexpr std::array<Precision, 5> kAllPrecisions = {
    Precision::kBf16, Precision::kFp16, Precision::kFp8, Precision::kInt8,
    Precision::kInt4};

// Bytes one element occupies: 2, 2, 1, 1, 0.5.
double BytesPerElement(Precision p);

// "bf16", "fp16", "fp8", "int8", "int4".
absl::string_view PrecisionName(Precision p);

// Parses a name as printed by PrecisionName (case-insensitive; "float16" and
// "bfloat16" are accepted too). The error lists the accepted names.
absl::StatusOr<Precision> ParsePrecision(absl::string_view name);

}  // namespace pilotlight::model
