#include "controller/model/gpu_class.h"

namespace pilotlight::model {

absl::string_view InterconnectName(InterconnectKind kind) {
  switch (kind) {
    case InterconnectKind::kPcie:
      return "PCIe";
    case InterconnectKind::kNvlink:
      return "NVLink";
    case InterconnectKind::kInfinityFabric:
      return "InfinityFabric";
  }
  return "PCIe";
}

bool GpuClass::SupportsWeights(Precision p) const {
  return ComputeTflops(p) > 0;
}

double GpuClass::ComputeTflops(Precision p) const {
  switch (p) {
    case Precision::kBf16:
      return bf16 ? fp16_tflops : 0.0;
    case Precision::kFp16:
    case Precision::kInt4:
      return fp16_tflops;
    case Precision::kFp8:
      return fp8_tflops;
    case Precision::kInt8:
      return int8_tops;
    case Precision::kFp4:
      return fp4_tflops;
  }
  return 0.0;
}

}  // namespace pilotlight::model
