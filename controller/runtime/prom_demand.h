// PromDemand: the DemandSource over Prometheus. Refresh() runs once a tick:
// every distinct query of the presets and custom PromQL in use, each ONE
// query answered for every pod in the cluster, whatever the number of
// endpoints. Read() joins an endpoint's ready pods to the last answers.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/kube/informer.h"
#include "controller/prom/demand.h"
#include "controller/prom/prom_client.h"
#include "controller/runtime/demand_source.h"

namespace pilotlight::runtime {

class PromDemand final : public DemandSource {
 public:
  // `rate_window`: range of the presets' rate(); `tick`: the interval
  // arrivals are counted over at an endpoint's first read (after it, the
  // time since its last read, at most `rate_window`).
  PromDemand(prom::PromClient& client, absl::Duration rate_window,
             absl::Duration tick)
      : client_(client), rate_window_(rate_window), tick_(tick) {}

  struct RefreshStats {
    int64_t queries = 0;
    std::map<std::string, std::string> errors;  // query -> error
  };
  // Reads every query the endpoints in `autoscalers` use, at `at`.
  RefreshStats Refresh(const kube::ObjectCache& autoscalers, absl::Time at);

  int64_t Epoch(const std::string& endpoint) const override;
  policy::DemandSample Read(const api::AutoscalerResource& endpoint,
                            const std::vector<std::string>& ready_pods,
                            absl::Time now, std::string& missing) override;
  std::map<std::string, double> BusyPods(
      const api::AutoscalerResource& endpoint,
      const std::vector<std::string>& pods) const override;
  void Forget(const std::string& endpoint) override;

 private:
  prom::DemandQueries QueriesOf(const api::MetricsSpec& m) const;
  // The sum of one query's answer over `pods` from the last answers (mu_
  // held); unset when the query failed or any pod has no series (missing is
  // not zero), and then, when `missing` is given, why is appended to it.
  std::optional<double> SumOverPods(const std::string& query,
                                    const std::vector<std::string>& pods,
                                    const char* what,
                                    std::string* missing) const;
  // The engines' latency over `ready_pods` from the last answers (mu_
  // held); nullopt when any part is missing.
  std::optional<policy::EngineLatency> LatencyOf(
      const prom::DemandQueries& q,
      const std::vector<std::string>& ready_pods) const;

  prom::PromClient& client_;
  const absl::Duration rate_window_;
  const absl::Duration tick_;
  mutable std::mutex mu_;
  std::map<std::string, absl::StatusOr<prom::PodValues>> answers_;
  int64_t epoch_ = 0;
  // Per endpoint, when it was last read: its arrivals are the rate times
  // the time since (a poke's read between two ticks counts only its share).
  std::map<std::string, std::optional<absl::Time>> last_read_;
};

}  // namespace pilotlight::runtime
