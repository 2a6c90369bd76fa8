// DemandReporter: the activator's end of the demand stream
// (proto/pilotlight/v1/demand.proto). One stream per controller replica --
// every replica gets the demand, so whichever leads, now or after a
// failover, has it. The replicas are a fixed list (--controller) or the
// Ready pods of the controller found by label (SetControllers). A full report
// (every endpoint the router has seen) goes out every `interval`; a poke (a
// request held for an endpoint with no ready pod) goes out at once as a partial
// report of the poked endpoints. A broken stream is reopened with back-off (100
// ms doubling to 2 s); the first report on a new stream is full, and counters
// are totals, so a controller that restarted misses nothing. Drain() sends a
// last report marked draining, so the controllers take the stream's end as a
// goodbye.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "controller/activator/metrics.h"
#include "controller/activator/router.h"
#include "pilotlight/v1/demand.grpc.pb.h"

namespace pilotlight::activator {

struct ReporterOptions {
  std::vector<std::string> controllers;  // "host:port" of each replica
  std::string name;                      // this activator (its pod name)
  absl::Duration interval = absl::Seconds(1);
};

class DemandReporter {
 public:
  DemandReporter(ReporterOptions options, const Router& router,
                 Metrics& metrics);
  ~DemandReporter();  // stops

  void Start();  // streams to options.controllers
  // The controller replicas now (e.g. the Ready pods of the controller's
  // Deployment): streams open to new ones and close to those gone.
  void SetControllers(const std::vector<std::string>& addresses);
  // Send `endpoint`'s demand to every controller now.
  void Poke(const std::string& endpoint);
  // Last reports (draining), then close the streams.
  void Drain();
  // Controllers with an open stream that acknowledged a report.
  int connected() const { return connected_.load(); }

 private:
  struct Stream;
  using AckReader = grpc::ClientReaderWriter<v1::DemandReport, v1::DemandAck>;
  void Run(Stream& s);
  void ReadAcks(Stream& s, AckReader& stream, std::atomic<bool>& acked);
  bool NextReport(Stream& s, bool first, int64_t sequence,
                  absl::Time& next_full, v1::DemandReport& r);

  const ReporterOptions options_;
  const Router& router_;
  Metrics& metrics_;
  const int64_t incarnation_;
  std::mutex streams_mu_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Stream>> retired_;  // joined at the end
  std::atomic<bool> stop_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int> connected_{0};
};

}  // namespace pilotlight::activator
