#include "controller/kube/update.h"

#include "absl/strings/str_cat.h"

namespace pilotlight::kube {

absl::Status UpdateWithRetry(KubeClient& client, const std::string& path,
                             const std::function<void(nlohmann::json&)>& mutate,
                             int attempts) {
  absl::Status last = absl::OkStatus();
  for (int attempt = 0; attempt < attempts; ++attempt) {
    absl::StatusOr<KubeClient::Response> got = client.Request("GET", path, "");
    if (!got.ok()) {
      return got.status();
    }
    nlohmann::json obj = nlohmann::json::parse(got->body, nullptr, false);
    if (!obj.is_object()) {
      return absl::DataLossError(absl::StrCat("GET ", path, ": not JSON"));
    }
    mutate(obj);
    absl::StatusOr<KubeClient::Response> put =
        client.Request("PUT", path, obj.dump());
    if (put.ok()) {
      return absl::OkStatus();
    }
    if (put.status().code() != absl::StatusCode::kAborted) {
      return put.status();  // not a conflict: retrying will not help
    }
    last = put.status();
  }
  return absl::AbortedError(
      absl::StrCat("PUT ", path, ": ", attempts,
                   " conflicts in a row; last: ", last.message()));
}

}  // namespace pilotlight::kube
