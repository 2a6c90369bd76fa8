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
    case MetricsServer::kVllm:
      return {ByPod("vllm:num_requests_running"),
              ByPod("vllm:num_requests_waiting"),
              Rate("vllm:request_success_total", rate_window),
              Rate("vllm:generation_tokens_total", rate_window)};
    case MetricsServer::kSglang:
      return {ByPod("sglang:num_running_reqs"), ByPod("sglang:num_queue_reqs"),
              "", ByPod("sglang:gen_throughput")};
    case MetricsServer::kTgi:
      return {ByPod("tgi_batch_current_size"), ByPod("tgi_queue_size"),
              Rate("tgi_request_success", rate_window), ""};
    case MetricsServer::kTriton:
      return {"", ByPod("nv_inference_pending_request_count"),
              Rate("nv_inference_request_success", rate_window), ""};
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
