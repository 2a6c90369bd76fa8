#include "controller/policy/decision.h"

#include "absl/strings/str_format.h"

namespace pilotlight::policy {

absl::string_view ScaleReasonName(ScaleReason r) {
  switch (r) {
    case ScaleReason::kNoData:
      return "NoData";
    case ScaleReason::kInvalidSpec:
      return "InvalidSpec";
    case ScaleReason::kSteady:
      return "Steady";
    case ScaleReason::kScaleFromZero:
      return "ScaleFromZero";
    case ScaleReason::kScaleAhead:
      return "ScaleAhead";
    case ScaleReason::kPanic:
      return "Panic";
    case ScaleReason::kWarmPool:
      return "WarmPool";
    case ScaleReason::kScaleDownHeld:
      return "ScaleDownHeld";
    case ScaleReason::kScaleDownLimited:
      return "ScaleDownLimited";
    case ScaleReason::kPartialDemand:
      return "PartialDemand";
    case ScaleReason::kSaturated:
      return "Saturated";
    case ScaleReason::kRising:
      return "Rising";
    case ScaleReason::kKeepAlive:
      return "KeepAlive";
    case ScaleReason::kPreWarm:
      return "PreWarm";
    case ScaleReason::kScaledToZero:
      return "ScaledToZero";
    case ScaleReason::kMinReplicas:
      return "MinReplicas";
    case ScaleReason::kMaxReplicas:
      return "MaxReplicas";
    case ScaleReason::kSpotFallback:
      return "SpotFallback";
    case ScaleReason::kTierSwitch:
      return "TierSwitch";
    case ScaleReason::kUnchanged:
      return "Unchanged";
  }
  return "Unknown";
}

std::string MessageSeconds(absl::Duration d) {
  return absl::StrFormat("%.0f s", absl::ToDoubleSeconds(d));
}

}  // namespace pilotlight::policy
