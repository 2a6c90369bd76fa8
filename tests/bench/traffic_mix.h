// The mix of synthetic endpoints the re-tuning benches share
// (traffic_record_bench, retune_bench): a tenth busy (Poisson, 20
// requests/s), three tenths moderate (0.2/s), six tenths sparse (4 an
// hour).
#pragma once

namespace pilotlight::bench {

struct TrafficClass {
  const char* name;
  double share;  // of the endpoints
  double rate;   // requests a second
};

inline constexpr TrafficClass kTrafficMix[] = {
    {"busy (20/s)", 0.1, 20},
    {"moderate (0.2/s)", 0.3, 0.2},
    {"sparse (4/h)", 0.6, 4.0 / 3600}};

}  // namespace pilotlight::bench
