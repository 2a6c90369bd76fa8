#include "controller/api/demand_service.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace pilotlight::api {

absl::StatusOr<ActivatorReport> FromProto(const v1::DemandReport& report) {
  if (report.activator().empty()) {
    return absl::InvalidArgumentError("DemandReport.activator: empty");
  }
  ActivatorReport r;
  r.activator = report.activator();
  r.incarnation = report.incarnation();
  r.full = report.full();
  r.draining = report.draining();
  for (int i = 0; i < report.endpoints_size(); ++i) {
    const v1::EndpointDemand& e = report.endpoints(i);
    const std::string field = absl::StrCat("DemandReport.endpoints[", i, "]");
    if (e.namespace_().empty() || e.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": namespace and name are required"));
    }
    if (e.arrivals_total() < 0 || e.in_flight() < 0 || e.held() < 0 ||
        e.held_bytes() < 0 || !(e.oldest_wait_seconds() >= 0) ||
        e.wakes_refused_total() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " (", e.namespace_(), "/", e.name(),
                       "): counts must be non-negative"));
    }
    r.endpoints[absl::StrCat(e.namespace_(), "/", e.name())] =
        EndpointDemand{.arrivals_total = e.arrivals_total(),
                       .in_flight = e.in_flight(),
                       .held = e.held(),
                       .held_bytes = e.held_bytes(),
                       .oldest_wait_seconds = e.oldest_wait_seconds(),
                       .no_replica = e.no_replica(),
                       .wakes_refused_total = e.wakes_refused_total()};
  }
  return r;
}

grpc::Status DemandService::Report(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<v1::DemandAck, v1::DemandReport>* stream) {
  v1::DemandReport report;
  std::string activator;
  int64_t incarnation = 0;
  bool draining = false;
  while (stream->Read(&report)) {
    absl::StatusOr<ActivatorReport> r = FromProto(report);
    if (!r.ok()) {
      if (!activator.empty()) {
        receiver_.Disconnected(activator, incarnation, false);
      }
      return {grpc::StatusCode::INVALID_ARGUMENT,
              std::string(r.status().message())};
    }
    activator = r->activator;
    incarnation = r->incarnation;
    draining = r->draining;
    receiver_.Apply(*r);
    v1::DemandAck ack;
    ack.set_sequence(report.sequence());
    ack.set_leading(receiver_.Leading());
    if (!stream->Write(ack)) {
      break;
    }
  }
  if (!activator.empty()) {
    receiver_.Disconnected(activator, incarnation, draining);
  }
  return grpc::Status::OK;
}

}  // namespace pilotlight::api
