#include "controller/model/precision.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace pilotlight::model {

double BytesPerElement(Precision p) {
  switch (p) {
    case Precision::kBf16:
    case Precision::kFp16:
      return 2.0;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1.0;
    case Precision::kInt4:
    case Precision::kFp4:
      return 0.5;
  }
  return 2.0;
}

double WeightBytesPerParam(Precision p, int int4_group_size) {
  switch (p) {
    case Precision::kInt4:
      return 0.5 + 4.0 / std::max(int4_group_size, 1);
    case Precision::kFp4:
      return 0.5 + 1.0 / 16.0;
    case Precision::kBf16:
    case Precision::kFp16:
    case Precision::kFp8:
    case Precision::kInt8:
      return BytesPerElement(p);
  }
  return BytesPerElement(p);
}

absl::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kInt8:
      return "int8";
    case Precision::kInt4:
      return "int4";
    case Precision::kFp4:
      return "fp4";
  }
  return "bf16";
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "bfloat16") {
    return Precision::kBf16;
  }
  if (lower == "float16" || lower == "half") {
    return Precision::kFp16;
  }
  for (Precision p : kAllPrecisions) {
    if (lower == PrecisionName(p)) {
      return p;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision \"", name,
                   "\" (known: bf16, fp16, fp8, int8, int4, fp4)"));
}

}  // namespace pilotlight::model
