// DemandService: the controller's end of the activator's demand stream
// (proto/pilotlight/v1/demand.proto, service pilotlight.v1.Demand). It turns
// each DemandReport into an ActivatorReport and hands it to a
// DemandReceiver (the runtime's ActivatorDemand table and work queue),
// acknowledging every report with whether this replica leads. A stream
// that ends after a draining report is a goodbye; any other end (a broken
// connection, a cancelled call) is a loss the receiver must not read as
// "no demand".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "pilotlight/v1/demand.grpc.pb.h"

namespace pilotlight::api {

struct EndpointDemand {
  int64_t arrivals_total = 0;  // since the activator started
  int32_t in_flight = 0;
  int32_t held = 0;
  int64_t held_bytes = 0;
  double oldest_wait_seconds = 0;
  bool no_replica = false;
  int64_t wakes_refused_total = 0;  // since the activator started
};

struct ActivatorReport {
  std::string activator;
  int64_t incarnation = 0;
  bool full = false;  // lists every endpoint with demand
  bool draining = false;
  std::map<std::string, EndpointDemand> endpoints;  // "ns/name"
};

// Malformed reports (no activator name, an endpoint without namespace or
// name, negative counts) are refused with INVALID_ARGUMENT, naming the field.
absl::StatusOr<ActivatorReport> FromProto(const v1::DemandReport& report);

class DemandReceiver {
 public:
  virtual ~DemandReceiver() = default;
  virtual void Apply(const ActivatorReport& report) = 0;
  virtual void Disconnected(const std::string& activator, int64_t incarnation,
                            bool clean) = 0;
  virtual bool Leading() const = 0;
};

class DemandService final : public v1::Demand::Service {
 public:
  explicit DemandService(DemandReceiver& receiver) : receiver_(receiver) {}

  grpc::Status Report(grpc::ServerContext* context,
                      grpc::ServerReaderWriter<v1::DemandAck, v1::DemandReport>*
                          stream) override;

 private:
  DemandReceiver& receiver_;
};

}  // namespace pilotlight::api
