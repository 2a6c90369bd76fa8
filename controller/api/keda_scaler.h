// KedaScaler: KEDA's external scaler (proto/keda/externalscaler.proto),
// served by the controller beside the activators' demand stream, so a
// cluster that scales with KEDA keeps KEDA and scales on Pilotlight's
// decisions. A ScaledObject's trigger
//
//   - type: external-push
//     metadata:
//       scalerAddress: pilotlight-controller.pilotlight-system:9090
//       autoscaler: chat        # the InferenceAutoscaler ("ns/name", or a
//                               # name in the ScaledObject's namespace;
//                               # default: the ScaledObject's own name)
//       deployment: chat-l4     # its variant (default: the first)
//
// is active while Pilotlight decides replicas for that variant -- pushed
// through StreamIsActive the moment a decision changes (a request held at
// zero reaches the controller as the activator's poke and is decided at
// once), not at KEDA's polling interval -- and its metric is the variant's
// decided replicas with a target of 1 per replica, so the HPA KEDA makes
// lands on Pilotlight's count (docs/keda.md).
//
// Thread-safety: the gRPC handlers run on gRPC's threads; Changed and
// Shutdown may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "keda/externalscaler.grpc.pb.h"

namespace pilotlight::api {

class KedaScaler final : public externalscaler::ExternalScaler::Service {
 public:
  // Each variant's (deployment, decided replicas) of endpoint "ns/name", in
  // spec order. NotFound: no such InferenceAutoscaler; FailedPrecondition:
  // not decided yet.
  using Variants = std::vector<std::pair<std::string, int32_t>>;
  using Lookup = std::function<absl::StatusOr<Variants>(const std::string&)>;

  // `recheck`: how often a stream looks again without being told (and
  // notices its client gone).
  explicit KedaScaler(Lookup lookup,
                      absl::Duration recheck = absl::Milliseconds(500))
      : lookup_(std::move(lookup)), recheck_(recheck) {}

  // Endpoint "ns/name"'s decision may have changed: its streams look
  // again now (only its own: a reconcile wakes no other endpoint's).
  void Changed(const std::string& endpoint);
  // Ends every stream (the server is stopping).
  void Shutdown();

  grpc::Status IsActive(grpc::ServerContext* context,
                        const externalscaler::ScaledObjectRef* ref,
                        externalscaler::IsActiveResponse* out) override;
  grpc::Status StreamIsActive(
      grpc::ServerContext* context, const externalscaler::ScaledObjectRef* ref,
      grpc::ServerWriter<externalscaler::IsActiveResponse>* writer) override;
  grpc::Status GetMetricSpec(
      grpc::ServerContext* context, const externalscaler::ScaledObjectRef* ref,
      externalscaler::GetMetricSpecResponse* out) override;
  grpc::Status GetMetrics(grpc::ServerContext* context,
                          const externalscaler::GetMetricsRequest* request,
                          externalscaler::GetMetricsResponse* out) override;

 private:
  struct Target {
    std::string endpoint;    // "ns/name"
    std::string deployment;  // "" until resolved: the first variant
  };
  // The endpoint "ns/name" `ref` names.
  static absl::StatusOr<std::string> EndpointOf(
      const externalscaler::ScaledObjectRef& ref);
  // The endpoint and variant `ref` names, and its decided replicas.
  absl::StatusOr<std::pair<Target, int32_t>> Resolve(
      const externalscaler::ScaledObjectRef& ref) const;

  // Per endpoint with a stream open: its version, and its streams' wait.
  struct Watch {
    std::condition_variable changed;
    uint64_t version = 0;
    int streams = 0;
  };

  const Lookup lookup_;
  const absl::Duration recheck_;
  std::mutex mu_;
  std::map<std::string, Watch> watches_;  // node-stable: waits hold refs
  bool shutdown_ = false;
};

}  // namespace pilotlight::api
