#include "controller/api/keda_scaler.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace pilotlight::api {
namespace {

grpc::Status ToGrpc(const absl::Status& s) {
  const auto code = s.code() == absl::StatusCode::kNotFound
                        ? grpc::StatusCode::NOT_FOUND
                    : s.code() == absl::StatusCode::kInvalidArgument
                        ? grpc::StatusCode::INVALID_ARGUMENT
                    : s.code() == absl::StatusCode::kFailedPrecondition
                        ? grpc::StatusCode::FAILED_PRECONDITION
                        : grpc::StatusCode::UNAVAILABLE;
  return {code, std::string(s.message())};
}

std::string MetricName(const std::string& deployment) {
  return absl::StrCat("pilotlight-", deployment);
}

}  // namespace

absl::StatusOr<std::string> KedaScaler::EndpointOf(
    const externalscaler::ScaledObjectRef& ref) {
  const auto it = ref.scalermetadata().find("autoscaler");
  std::string autoscaler =
      it != ref.scalermetadata().end() ? it->second : std::string();
  if (autoscaler.empty()) {
    autoscaler = ref.name();
  }
  if (autoscaler.empty()) {
    return absl::InvalidArgumentError(
        "trigger metadata: autoscaler (the InferenceAutoscaler) is required");
  }
  if (autoscaler.find('/') == std::string::npos) {
    if (ref.namespace_().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("trigger metadata: autoscaler \"", autoscaler,
                       "\" has no namespace and the ScaledObject names none"));
    }
    autoscaler = absl::StrCat(ref.namespace_(), "/", autoscaler);
  }
  return autoscaler;
}

absl::StatusOr<std::pair<KedaScaler::Target, int32_t>> KedaScaler::Resolve(
    const externalscaler::ScaledObjectRef& ref) const {
  const auto& meta = ref.scalermetadata();
  const auto get = [&](const char* key) {
    const auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
  };
  Target t;
  absl::StatusOr<std::string> endpoint = EndpointOf(ref);
  if (!endpoint.ok()) {
    return endpoint.status();
  }
  t.endpoint = *std::move(endpoint);
  t.deployment = get("deployment");
  absl::StatusOr<Variants> variants = lookup_(t.endpoint);
  if (!variants.ok()) {
    return variants.status();
  }
  for (const auto& [deployment, replicas] : *variants) {
    if (t.deployment.empty() || t.deployment == deployment) {
      t.deployment = deployment;
      return std::make_pair(t, replicas);
    }
  }
  std::string known;
  for (const auto& v : *variants) {
    absl::StrAppend(&known, known.empty() ? "" : ", ", v.first);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("trigger metadata: deployment \"", t.deployment,
                   "\" is no variant of InferenceAutoscaler ", t.endpoint,
                   " (its variants: ", known, ")"));
}

void KedaScaler::Changed(const std::string& endpoint) {
  const std::lock_guard<std::mutex> lock(mu_);
  const auto it = watches_.find(endpoint);
  if (it != watches_.end()) {
    ++it->second.version;
    it->second.changed.notify_all();
  }
}

void KedaScaler::Shutdown() {
  const std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  for (auto& [endpoint, w] : watches_) {
    w.changed.notify_all();
  }
}

grpc::Status KedaScaler::IsActive(grpc::ServerContext* /*context*/,
                                  const externalscaler::ScaledObjectRef* ref,
                                  externalscaler::IsActiveResponse* out) {
  const auto r = Resolve(*ref);
  if (!r.ok()) {
    return ToGrpc(r.status());
  }
  out->set_result(r->second > 0);
  return grpc::Status::OK;
}

grpc::Status KedaScaler::StreamIsActive(
    grpc::ServerContext* context, const externalscaler::ScaledObjectRef* ref,
    grpc::ServerWriter<externalscaler::IsActiveResponse>* writer) {
  // The endpoint it names (an error ends the stream: KEDA opens it again).
  const absl::StatusOr<std::string> endpoint = EndpointOf(*ref);
  if (!endpoint.ok()) {
    return ToGrpc(endpoint.status());
  }
  std::unique_lock<std::mutex> lock(mu_);
  Watch& w = watches_[*endpoint];
  ++w.streams;
  std::optional<bool> sent;
  grpc::Status end = grpc::Status::OK;
  while (!context->IsCancelled() && !shutdown_) {
    const uint64_t seen = w.version;
    lock.unlock();
    const absl::StatusOr<std::pair<Target, int32_t>> r = Resolve(*ref);
    bool write = false;
    externalscaler::IsActiveResponse m;
    if (!r.ok() && r.status().code() != absl::StatusCode::kFailedPrecondition) {
      end = ToGrpc(r.status());
    } else if (r.ok() && sent != (r->second > 0)) {
      m.set_result(r->second > 0);
      write = true;
    }
    const bool written = write && writer->Write(m);
    lock.lock();
    if (!end.ok() || (write && !written)) {
      break;  // an error, or the client went away
    }
    if (written) {
      sent = m.result();
    }
    w.changed.wait_for(lock, absl::ToChronoNanoseconds(recheck_),
                       [&] { return shutdown_ || w.version != seen; });
  }
  if (shutdown_ && end.ok()) {
    end = {grpc::StatusCode::UNAVAILABLE, "the controller is stopping"};
  }
  if (--w.streams == 0) {
    watches_.erase(*endpoint);
  }
  return end;
}

grpc::Status KedaScaler::GetMetricSpec(
    grpc::ServerContext* /*context*/,
    const externalscaler::ScaledObjectRef* ref,
    externalscaler::GetMetricSpecResponse* out) {
  const auto r = Resolve(*ref);
  if (!r.ok()) {
    return ToGrpc(r.status());
  }
  externalscaler::MetricSpec* spec = out->add_metricspecs();
  spec->set_metricname(MetricName(r->first.deployment));
  spec->set_targetsize(1);  // the value is replicas: one per replica
  spec->set_targetsizefloat(1);
  return grpc::Status::OK;
}

grpc::Status KedaScaler::GetMetrics(
    grpc::ServerContext* /*context*/,
    const externalscaler::GetMetricsRequest* request,
    externalscaler::GetMetricsResponse* out) {
  const auto r = Resolve(request->scaledobjectref());
  if (!r.ok()) {
    return ToGrpc(r.status());
  }
  externalscaler::MetricValue* v = out->add_metricvalues();
  v->set_metricname(request->metricname().empty()
                        ? MetricName(r->first.deployment)
                        : request->metricname());
  v->set_metricvalue(r->second);
  v->set_metricvaluefloat(r->second);
  return grpc::Status::OK;
}

}  // namespace pilotlight::api
