#include "controller/runtime/prom_demand.h"

#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"

namespace pilotlight::runtime {

using json = nlohmann::json;

PromDemand::RefreshStats PromDemand::Refresh(
    const kube::ObjectCache& autoscalers, absl::Time at) {
  std::set<std::string> queries;
  autoscalers.ForEach([&](const json& ia) {
    const json& m = Field(ia, {"spec", "metrics"});
    std::string server = StringField(m, {"server"});
    if (server.empty()) {
      server = "vllm";
    }
    if (server == "custom") {
      queries.insert(StringField(m, {"concurrencyQuery"}));
      queries.insert(StringField(m, {"arrivalRateQuery"}));
      return;
    }
    absl::StatusOr<prom::MetricsServer> s = prom::ParseMetricsServer(server);
    if (s.ok()) {
      const prom::DemandQueries q = prom::PresetQueries(*s, rate_window_);
      queries.insert({q.in_flight, q.queued, q.arrival_rate, q.tokens_per_s,
                      q.itl_sum, q.itl_count, q.itl_tokens, q.ttft_sum,
                      q.ttft_count, q.prompt_tokens});
    }
  });
  queries.erase("");
  prom::DemandReader reader(client_);
  const int64_t before = client_.queries();
  std::map<std::string, absl::StatusOr<prom::PodValues>> got =
      reader.Read(queries, at);
  RefreshStats stats;
  stats.queries = client_.queries() - before;
  for (const auto& [q, r] : got) {
    if (!r.ok()) {
      stats.errors.emplace(q, r.status().ToString());
    }
  }
  const std::lock_guard<std::mutex> lock(mu_);
  answers_ = std::move(got);
  ++epoch_;
  return stats;
}

int64_t PromDemand::Epoch(const std::string& /*endpoint*/) const {
  const std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

prom::DemandQueries PromDemand::QueriesOf(const api::MetricsSpec& m) const {
  if (m.server != prom::MetricsServer::kCustom) {
    return prom::PresetQueries(m.server, rate_window_);
  }
  prom::DemandQueries q;
  q.in_flight = m.concurrency_query;
  q.arrival_rate = m.arrival_rate_query;
  return q;
}

policy::DemandSample PromDemand::Read(
    const api::AutoscalerResource& endpoint,
    const std::vector<std::string>& ready_pods, absl::Time now,
    std::string& missing) {
  const prom::DemandQueries q = QueriesOf(endpoint.metrics);
  policy::DemandSample s;
  s.at = now;
  const std::lock_guard<std::mutex> lock(mu_);
  const auto sum = [&](const std::string& query, const char* what) {
    return SumOverPods(query, ready_pods, what, &missing);
  };
  s.in_flight = sum(q.in_flight, "requests running");
  s.queued = sum(q.queued, "requests waiting");
  // Arrivals since this endpoint's last read: the rate times that time.
  // At a tick's time each (rate x tick) counted a request twice whenever
  // an activator's poke read the endpoint between two ticks.
  std::optional<absl::Time>& last = last_read_[endpoint.spec.name];
  const absl::Duration since =
      policy::ArrivalSpan(last, now, tick_, rate_window_);
  last = now;
  if (const std::optional<double> rate = sum(q.arrival_rate, "arrival rate")) {
    s.arrivals = *rate * absl::ToDoubleSeconds(since);
  }
  s.output_tokens_per_s = sum(q.tokens_per_s, "tokens/s");
  s.latency = LatencyOf(q, ready_pods);
  return s;
}

void PromDemand::Forget(const std::string& endpoint) {
  const std::lock_guard<std::mutex> lock(mu_);
  last_read_.erase(endpoint);
}

std::map<std::string, double> PromDemand::BusyPods(
    const api::AutoscalerResource& endpoint,
    const std::vector<std::string>& pods) const {
  const prom::DemandQueries q = QueriesOf(endpoint.metrics);
  const std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, double> busy;
  for (const std::string& query : {q.in_flight, q.queued}) {
    if (query.empty()) {
      continue;
    }
    const auto it = answers_.find(query);
    if (it == answers_.end() || !it->second.ok()) {
      continue;
    }
    for (const std::string& pod : pods) {
      if (const auto v = it->second->find(pod); v != it->second->end()) {
        busy[pod] += v->second;
      }
    }
  }
  return busy;
}

std::optional<double> PromDemand::SumOverPods(
    const std::string& query, const std::vector<std::string>& pods,
    const char* what, std::string* missing) const {
  if (query.empty()) {
    return std::nullopt;
  }
  auto it = answers_.find(query);
  if (it == answers_.end()) {
    if (missing != nullptr) {
      absl::StrAppend(missing, what, ": not queried yet; ");
    }
    return std::nullopt;
  }
  if (!it->second.ok()) {
    if (missing != nullptr) {
      absl::StrAppend(missing, what, ": ", it->second.status().message(), "; ");
    }
    return std::nullopt;
  }
  double total = 0;
  for (const std::string& pod : pods) {
    auto v = it->second->find(pod);
    if (v == it->second->end()) {
      if (missing != nullptr) {
        absl::StrAppend(missing, what, ": no series for pod ", pod, "; ");
      }
      return std::nullopt;
    }
    total += v->second;
  }
  return total;
}

std::optional<policy::EngineLatency> PromDemand::LatencyOf(
    const prom::DemandQueries& q,
    const std::vector<std::string>& ready_pods) const {
  // Calibration input is optional: any gap (no such query, an error, a pod
  // without the series) leaves it out, and never counts as missing demand.
  if (ready_pods.empty()) {
    return std::nullopt;
  }
  const auto quiet_sum = [&](const std::string& query) {
    return SumOverPods(query, ready_pods, "", nullptr);
  };
  const std::optional<double> itl_sum = quiet_sum(q.itl_sum);
  const std::optional<double> itl_count = quiet_sum(q.itl_count);
  if (!itl_sum || !itl_count || *itl_count <= 0) {
    return std::nullopt;
  }
  // The tokens behind the mean: its own count, or (TGI, whose histogram is
  // of each request's mean) the generated tokens.
  const std::optional<double> tokens =
      q.itl_tokens.empty() ? itl_count : quiet_sum(q.itl_tokens);
  if (!tokens || *tokens <= 0) {
    return std::nullopt;
  }
  const double window = absl::ToDoubleSeconds(tick_);
  policy::EngineLatency l;
  l.itl_s = *itl_sum / *itl_count;
  l.itl_tokens = *tokens * window;
  const std::optional<double> ttft_sum = quiet_sum(q.ttft_sum);
  const std::optional<double> ttft_count = quiet_sum(q.ttft_count);
  const std::optional<double> prompts = quiet_sum(q.prompt_tokens);
  if (ttft_sum && ttft_count && *ttft_count > 0) {
    l.ttft_s = *ttft_sum / *ttft_count;
    l.ttft_requests = *ttft_count * window;
    if (prompts) {
      l.prompt_tokens = *prompts / *ttft_count;
    }
  }
  return l;
}

}  // namespace pilotlight::runtime
