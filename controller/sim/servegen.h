// ServeGen per-client rate traces (Alibaba Model Studio; arXiv 2505.09999):
// each client file has one line per 10-minute window,
//   timestamp_s, rate (req/s), cv, Gamma|Weibull|<empty>, param1, param2
// Replaying them means sampling arrivals. Per window, inter-arrival times are
// drawn from the fitted family with its shape (param1) and a scale set so
// the window's mean rate is exactly `rate` (the shape carries the
// burstiness); an empty family or a zero rate is an idle window. Sampling is
// seeded per client and window, so a run is reproducible, clients are
// independent, and a time slice holds exactly the full replay's arrivals.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/sim/trace.h"

namespace pilotlight::sim {

struct RateWindow {
  double start_s = 0;
  double rate = 0;
  enum class Family { kIdle, kGamma, kWeibull } family = Family::kIdle;
  double shape = 1;
};

struct RateClient {
  std::string name;
  std::vector<RateWindow> windows;
};

struct ServeGenOptions {
  double start_s = 0;
  double duration_s = std::numeric_limits<double>::infinity();
  int max_endpoints = 0;  // 0 = every client
  uint64_t seed = 1;
  uint32_t input_tokens = 1024;  // the token-length files were not shipped
  uint32_t output_tokens = 256;
  TraceChecks checks;  // every format's timestamp bounds
};

// One client file's text; `name` becomes the endpoint name. Rows with a
// rate above kMaxRate are bad rows. Window times that fail `checks` are an
// OutOfRange error naming the line (the whole trace is refused, not the
// client skipped).
inline constexpr double kMaxRate = 1e5;  // requests/s of one client
absl::StatusOr<RateClient> ParseRateClient(absl::string_view name,
                                           absl::string_view text, BadRows* bad,
                                           const TraceChecks& checks = {});

// Arrivals of `c` in [start, start + duration), relative to `start`.
EndpointTrace SampleClient(const RateClient& c, const ServeGenOptions& o);

// A Trace over the clients (generate() samples on demand); `window_s` is
// the 600 s window length.
Trace RateTrace(std::vector<RateClient> clients, const ServeGenOptions& o);

}  // namespace pilotlight::sim
