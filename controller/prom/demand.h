// Demand from Prometheus, batched: each signal (requests running, waiting,
// arrival rate, generated tokens/s) of each metrics preset is ONE query,
// `sum by (namespace, pod) (...)`, answered for every pod in the cluster at
// once; the controller joins the answers to its endpoints' pods through the
// informer cache. So the number of queries per tick depends on the presets
// in use (and on custom PromQL), never on the number of endpoints.
//
// Presets (metric names from the servers' documentation and code):
//   vllm    vllm:num_requests_running, vllm:num_requests_waiting,
//           rate(vllm:request_success_total),
//           rate(vllm:generation_tokens_total); for calibration the rates
//           of vllm:inter_token_latency_seconds (or, before vLLM 0.11,
//           vllm:time_per_output_token_seconds) and
//           vllm:time_to_first_token_seconds _sum/_count, and of
//           vllm:prompt_tokens_total
//   sglang  sglang:num_running_reqs, sglang:num_queue_reqs,
//           sglang:gen_throughput (no arrival rate: sglang:num_requests_total
//           has no series before a pod's first request, and a missing
//           signal says Degraded); for calibration the rates
//           of sglang:inter_token_latency_seconds and
//           sglang:time_to_first_token_seconds _sum/_count, and of
//           sglang:prompt_tokens_total
//   tgi     tgi_batch_current_size, tgi_queue_size, rate(tgi_request_success);
//           for calibration the rates of
//           tgi_request_mean_time_per_token_duration _sum/_count (each
//           request's mean) and of tgi_request_generated_tokens_sum (the
//           tokens behind them); TGI has no TTFT histogram
//   triton  nv_inference_pending_request_count,
//           rate(nv_inference_request_success) (no running gauge; no
//           per-token latency in Triton's own metrics: no calibration)
// A signal a preset lacks is left unset: the policy then works from the
// others. A pod with no series for a signal is missing, never zero.
#pragma once

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/prom/prom_client.h"

namespace pilotlight::prom {

enum class MetricsServer { kVllm, kSglang, kTgi, kTriton, kCustom };

absl::StatusOr<MetricsServer> ParseMetricsServer(absl::string_view name);
absl::string_view MetricsServerName(MetricsServer s);

// PromQL per signal, each answering one series per (namespace, pod); empty
// when the server does not export it.
struct DemandQueries {
  std::string in_flight;
  std::string queued;
  std::string arrival_rate;  // requests/s
  std::string tokens_per_s;  // generated tokens/s
  // The engine's own latency histograms, for calibrating the sizing model
  // (model/calibration.h): rates of their _sum and _count, and of prompt
  // tokens. Optional: absent series never count as missing demand.
  std::string itl_sum;     // inter-token latency seconds/s
  std::string itl_count;   // tokens/s behind it (requests/s for TGI)
  std::string itl_tokens;  // tokens/s behind it when itl_count is not
  std::string ttft_sum;
  std::string ttft_count;     // first tokens/s
  std::string prompt_tokens;  // prompt tokens/s
};

// The preset's queries; `rate_window` is the range of rate() (at least four
// scrape intervals). kCustom has no preset: it returns empty queries.
DemandQueries PresetQueries(MetricsServer server, absl::Duration rate_window);

// Per query: value per "namespace/pod", or the error the query met.
using PodValues = std::map<std::string, double, std::less<>>;

class DemandReader {
 public:
  explicit DemandReader(PromClient& client) : client_(client) {}

  // Runs every (non-empty) query once, at `at`.
  std::map<std::string, absl::StatusOr<PodValues>> Read(
      const std::set<std::string>& queries, absl::Time at);

 private:
  PromClient& client_;
};

}  // namespace pilotlight::prom
