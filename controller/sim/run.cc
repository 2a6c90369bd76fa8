#include "controller/sim/run.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/sim/baselines.h"

namespace pilotlight::sim {
namespace {

void MergeTimeline(std::vector<TimelinePoint>& into,
                   const std::vector<TimelinePoint>& from) {
  if (into.size() < from.size()) {
    into.resize(from.size());
  }
  for (size_t i = 0; i < from.size(); ++i) {
    into[i].t_s = from[i].t_s;
    into[i].demand += from[i].demand;
    into[i].replicas += from[i].replicas;
    into[i].ready += from[i].ready;
    into[i].cold_starts += from[i].cold_starts;
    into[i].cost_usd += from[i].cost_usd;
  }
}

}  // namespace

void ShapeFromTrace(const Trace& t, policy::EndpointSpec& spec) {
  std::vector<uint32_t> totals;
  double in = 0;
  double out = 0;
  int64_t n = 0;
  for (size_t i = 0; i < t.endpoints.size() && !t.generate; ++i) {
    for (const Request& r : t.endpoints[i].requests) {
      in += r.input_tokens;
      out += r.output_tokens;
      totals.push_back(r.input_tokens + r.output_tokens);
      ++n;
    }
  }
  if (n == 0 || in == 0) {
    return;  // no token lengths (service-time or rate traces): defaults
  }
  std::sort(totals.begin(), totals.end());
  const uint32_t p99 = totals[static_cast<size_t>(n - 1) * 99 / 100];
  const auto count = static_cast<double>(n);
  spec.workload.prompt_tokens = std::max(1, static_cast<int>(in / count));
  spec.workload.output_tokens = std::max(1, static_cast<int>(out / count));
  spec.workload.context_tokens =
      std::min(spec.model.max_context_tokens,
               std::max(8192, static_cast<int>((p99 + 1023) / 1024 * 1024)));
}

absl::StatusOr<RunReport> RunSimulation(const Trace& trace,
                                        const SimConfig& config,
                                        const RunOptions& options) {
  std::vector<std::string> names =
      options.policies.empty() ? PolicyNames() : options.policies;
  RunReport report;
  report.endpoints = static_cast<int>(trace.endpoints.size());
  report.duration_s = trace.duration_s;
  for (const std::string& n : names) {
    PolicyResult& p = report.policies.emplace_back();
    p.name = n;
  }
  const double total =
      static_cast<double>(trace.endpoints.size() * names.size());
  double done = 0;
  for (size_t i = 0; i < trace.endpoints.size(); ++i) {
    const EndpointTrace e = trace.Endpoint(i);
    report.requests += static_cast<int64_t>(e.requests.size());
    const bool service_times =
        std::any_of(e.requests.begin(), e.requests.end(),
                    [](const Request& r) { return r.service_s >= 0; });
    SimConfig c = config;
    c.spec.name = e.name;
    if (service_times && c.spec.concurrency_per_replica == 0) {
      c.spec.concurrency_per_replica = 1;
    }
    absl::StatusOr<std::vector<ServiceModel>> models =
        BuildServiceModels(c, service_times);
    if (!models.ok()) {
      return models.status();
    }
    PolicyContext ctx{&c, &*models, &e, service_times, options.knob};
    for (size_t p = 0; p < names.size(); ++p) {
      absl::StatusOr<ScalingPolicyPtr> policy = MakePolicy(names[p], ctx);
      if (!policy.ok()) {
        return policy.status();
      }
      const std::string what = absl::StrCat(names[p], " on ", e.name);
      ReplayProgress within;
      if (options.progress) {
        within = [&](double f) { options.progress((done + f) / total, what); };
      }
      if (options.request_log) {
        c.request_log = [&](const RequestRecord& r) {
          options.request_log(names[p], e.name, r);
        };
      }
      SimResult r =
          SimulateEndpoint(e, trace.duration_s, c, *models, **policy, within);
      SimResult& into = report.policies[p].result;
      MergeTimeline(into.timeline, r.timeline);
      into.Merge(r);
      done += 1;
      if (options.progress) {
        options.progress(done / total, what);
      }
    }
  }
  for (PolicyResult& p : report.policies) {
    if (config.sleep && !p.result.pool_changes.empty()) {
      const SleepTier& tier = *config.sleep;
      const double from_s = absl::ToDoubleSeconds(config.warmup);
      p.pool = Occupancy(p.result.pool_changes, tier.engines_per_gpu,
                         tier.gpus_per_engine, from_s, trace.duration_s);
      p.sized_pool =
          Sized(std::move(p.result.pool_changes), tier.engines_per_gpu,
                tier.gpus_per_engine, policy::PoolSizerFor(tier.pod_start),
                absl::ToDoubleSeconds(tier.pod_start),
                absl::ToDoubleSeconds(config.tick), from_s, trace.duration_s);
      p.result.pool_changes.clear();
      const double price = config.sleep->gpu_price_per_hour;
      p.sized_pool->cost_usd = p.sized_pool->gpu_hours * price;
      p.pool->cost_usd = p.pool->gpu_hours * price;
      p.pool->fixed_cost_usd =
          p.pool->peak_gpus * price *
          (trace.duration_s - absl::ToDoubleSeconds(config.warmup)) / 3600;
    }
  }
  return report;
}

}  // namespace pilotlight::sim
