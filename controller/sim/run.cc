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

absl::StatusOr<RunReport> RunSimulation(const Trace& trace,
                                        const SimConfig& config,
                                        const RunOptions& options) {
  std::vector<std::string> names =
      options.policies.empty() ? PolicyNames() : options.policies;
  RunReport report;
  report.endpoints = static_cast<int>(trace.endpoints.size());
  report.duration_s = trace.duration_s;
  for (const std::string& n : names) {
    report.policies.push_back({n, {}});
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
  return report;
}

}  // namespace pilotlight::sim
