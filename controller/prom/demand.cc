#include "controller/prom/demand.h"

#include "absl/strings/str_cat.h"

namespace pilotlight::prom {
namespace {

std::string ByPod(absl::string_view expr) {
  return absl::StrCat("sum by (namespace, pod) (", expr, ")");
}

std::string Rate(absl::string_view counter, absl::Duration window) {
  return ByPod(
      absl::StrCat("rate(", counter, "[", absl::ToInt64Seconds(window), "s])"));
}

}  // namespace

absl::StatusOr<MetricsServer> ParseMetricsServer(absl::string_view name) {
  for (MetricsServer s :
       {MetricsServer::kVllm, MetricsServer::kSglang, MetricsServer::kTgi,
        MetricsServer::kTriton, MetricsServer::kCustom}) {
    if (MetricsServerName(s) == name) {
      return s;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("metrics server \"", name,
                   "\" is not vllm, sglang, tgi, triton or custom"));
}

absl::string_view MetricsServerName(MetricsServer s) {
  switch (s) {
    case MetricsServer::kVllm:
      return "vllm";
    case MetricsServer::kSglang:
      return "sglang";
    case MetricsServer::kTgi:
      return "tgi";
    case MetricsServer::kTriton:
      return "triton";
    case MetricsServer::kCustom:
      return "custom";
  }
  return "?";
}

DemandQueries PresetQueries(MetricsServer server, absl::Duration rate_window) {
  switch (server) {
    case MetricsServer::kVllm: {
      DemandQueries q;
      q.in_flight = ByPod("vllm:num_requests_running");
      q.queued = ByPod("vllm:num_requests_waiting");
      q.arrival_rate = Rate("vllm:request_success_total", rate_window);
      q.tokens_per_s = Rate("vllm:generation_tokens_total", rate_window);
      // vLLM renamed its per-token histogram; either name answers.
      const auto itl = [&](absl::string_view suffix) {
        const int64_t w = absl::ToInt64Seconds(rate_window);
        return ByPod(
            absl::StrCat("rate(vllm:inter_token_latency_seconds_", suffix, "[",
                         w, "s]) or rate(vllm:time_per_output_token_seconds_",
                         suffix, "[", w, "s])"));
      };
      q.itl_sum = itl("sum");
      q.itl_count = itl("count");
      q.ttft_sum = Rate("vllm:time_to_first_token_seconds_sum", rate_window);
      q.ttft_count =
          Rate("vllm:time_to_first_token_seconds_count", rate_window);
      q.prompt_tokens = Rate("vllm:prompt_tokens_total", rate_window);
      return q;
    }
    case MetricsServer::kSglang: {
      DemandQueries q;
      q.in_flight = ByPod("sglang:num_running_reqs");
      q.queued = ByPod("sglang:num_queue_reqs");
      // sglang:num_requests_total has no series until a server's first
      // request (a labelled prometheus_client counter): a pod whose engine
      // reports (its running gauge) but has counted nothing yet arrives at
      // 0, not missing -- missing holds the endpoint's replicas and says
      // Degraded.
      q.arrival_rate =
          absl::StrCat(Rate("sglang:num_requests_total", rate_window), " or ",
                       ByPod("0 * sglang:num_running_reqs"));
      q.tokens_per_s = ByPod("sglang:gen_throughput");
      q.itl_sum = Rate("sglang:inter_token_latency_seconds_sum", rate_window);
      q.itl_count =
          Rate("sglang:inter_token_latency_seconds_count", rate_window);
      q.ttft_sum = Rate("sglang:time_to_first_token_seconds_sum", rate_window);
      q.ttft_count =
          Rate("sglang:time_to_first_token_seconds_count", rate_window);
      q.prompt_tokens = Rate("sglang:prompt_tokens_total", rate_window);
      return q;
    }
    case MetricsServer::kTgi: {
      DemandQueries q;
      q.in_flight = ByPod("tgi_batch_current_size");
      q.queued = ByPod("tgi_queue_size");
      q.arrival_rate = Rate("tgi_request_success", rate_window);
      q.itl_sum =
          Rate("tgi_request_mean_time_per_token_duration_sum", rate_window);
      q.itl_count =
          Rate("tgi_request_mean_time_per_token_duration_count", rate_window);
      q.itl_tokens = Rate("tgi_request_generated_tokens_sum", rate_window);
      return q;
    }
    case MetricsServer::kTriton: {
      DemandQueries q;
      q.queued = ByPod("nv_inference_pending_request_count");
      q.arrival_rate = Rate("nv_inference_request_success", rate_window);
      return q;
    }
    case MetricsServer::kCustom:
      return {};
  }
  return {};
}

std::map<std::string, absl::StatusOr<PodValues>> DemandReader::Read(
    const std::set<std::string>& queries, absl::Time at) {
  std::map<std::string, absl::StatusOr<PodValues>> out;
  for (const std::string& q : queries) {
    if (q.empty()) {
      continue;
    }
    absl::StatusOr<std::vector<Sample>> samples = client_.Query(q, at);
    if (!samples.ok()) {
      out.emplace(q, samples.status());
      continue;
    }
    PodValues values;
    for (const Sample& s : *samples) {
      const auto ns = s.labels.find("namespace");
      const auto pod = s.labels.find("pod");
      if (ns == s.labels.end() || pod == s.labels.end()) {
        continue;  // not by (namespace, pod): cannot be joined to a pod
      }
      values[absl::StrCat(ns->second, "/", pod->second)] += s.value;
    }
    out.emplace(q, std::move(values));
  }
  return out;
}

}  // namespace pilotlight::prom
