#include "controller/api/size_report.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace pilotlight::api {

pilotlight::v1::SizeReport ToProto(const model::SizingReport& report) {
  pilotlight::v1::SizeReport out;
  auto* m = out.mutable_model();
  m->set_name(report.model_name);
  m->set_params(report.params);
  m->set_weights_bytes(report.weights_bytes);
  m->set_kv_bytes_per_token(report.kv_bytes_per_token);
  for (const model::SizingOption& o : report.options) {
    auto* p = out.add_options();
    p->set_gpu_class(o.gpu_class);
    p->set_tensor_parallel(o.tensor_parallel);
    p->set_fits(o.fits);
    p->set_max_concurrency(o.max_concurrency);
    p->set_decode_tokens_per_s(o.decode_tokens_per_s);
    p->set_ttft_s(o.ttft_s);
    p->set_tpot_s(o.tpot_s);
    p->set_price_per_hour(o.price_per_hour);
    p->set_usd_per_million_tokens(o.usd_per_million_tokens);
    p->set_meets_slo(o.meets_slo);
    p->set_reason(o.reason);
    p->set_cold_start_s(o.cold_start_s);
    p->set_wake_s(o.wake_s);
    p->set_sleeping_per_gpu(o.sleeping_per_gpu);
    p->set_asleep_price_per_hour(o.asleep_price_per_hour);
  }
  if (report.recommended.has_value()) {
    const model::SizingOption& best = report.options[*report.recommended];
    auto* r = out.mutable_recommendation();
    r->set_gpu_class(best.gpu_class);
    r->set_tensor_parallel(best.tensor_parallel);
  }
  return out;
}

absl::StatusOr<std::string> ToJson(const pilotlight::v1::SizeReport& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status =
      google::protobuf::util::MessageToJsonString(report, &json, options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("encoding the size report: ", status.ToString()));
  }
  // Proto3 JSON omits an unset message field; scripts expect an explicit null.
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(json, nullptr, false);
  if (doc.is_discarded()) {
    return absl::InternalError("protobuf produced invalid JSON");
  }
  if (!doc.contains("recommendation")) {
    doc["recommendation"] = nullptr;
  }
  if (!doc.contains("options")) {
    doc["options"] = nlohmann::ordered_json::array();
  }
  return doc.dump(2);
}

}  // namespace pilotlight::api
