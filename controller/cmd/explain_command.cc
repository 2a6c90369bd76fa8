#include "controller/cmd/explain_command.h"

#include <memory>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "controller/api/explain.h"
#include "controller/base/exit_codes.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/inputs.h"
#include "controller/kube/kube_client.h"
#include "nlohmann/json.hpp"

namespace pilotlight::cmd {

int RunExplain(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  const char* usage =
      "usage: pilotlight explain <namespace>/<name> [flags]\n\n"
      "Why an endpoint runs what it runs, in dollars, from its live\n"
      "InferenceAutoscaler: the keep-alive against its break-even, the warm\n"
      "pool against the cold starts it prevents, the tier table, the spot\n"
      "split and its risk.\n\n";
  std::string endpoint;
  std::vector<std::string> rest = args;
  if (!rest.empty() && rest.front().rfind("--", 0) != 0) {
    endpoint = rest.front();
    rest.erase(rest.begin());
  }
  KubeInput kube;
  bool json = false;
  FlagSet flags("pilotlight explain", usage);
  kube.Declare(flags);
  flags.Switch("json", &json, "the facts as JSON instead of text");
  if (std::optional<int> exit = flags.ParseOrExit(rest, out, err)) {
    return *exit;
  }
  const size_t slash = endpoint.find('/');
  if (slash == std::string::npos || slash == 0 ||
      slash + 1 == endpoint.size()) {
    err << "pilotlight explain: name the endpoint as <namespace>/<name>\n"
        << usage;
    return kExitUsage;
  }
  absl::StatusOr<kube::KubeConfig> kc = kube.Load();
  if (!kc.ok()) {
    err << "pilotlight explain: " << kc.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client =
      kube::KubeClient::Create(*kc);
  if (!client.ok()) {
    err << "pilotlight explain: " << client.status().message() << "\n";
    return kExitInternal;
  }
  absl::StatusOr<kube::KubeClient::Response> r = (*client)->Request(
      "GET",
      absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/",
                   endpoint.substr(0, slash), "/inferenceautoscalers/",
                   endpoint.substr(slash + 1)),
      "");
  if (!r.ok()) {
    err << "pilotlight explain: " << endpoint << ": " << r.status().message()
        << "\n";
    return r.status().code() == absl::StatusCode::kNotFound ? kExitUsage
                                                            : kExitInternal;
  }
  const nlohmann::json ia = nlohmann::json::parse(r->body, nullptr, false);
  if (!ia.is_object()) {
    err << "pilotlight explain: the API server's answer is not JSON\n";
    return kExitInternal;
  }
  if (json) {
    out << api::ExplainJson(ia).dump(2) << "\n";
  } else {
    out << api::ExplainText(ia);
  }
  return 0;
}

}  // namespace pilotlight::cmd
