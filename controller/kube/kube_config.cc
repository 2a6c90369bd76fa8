#include "controller/kube/kube_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace pilotlight::kube {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return std::move(s).str();
}

std::string Resolve(absl::string_view base, const std::string& path) {
  if (path.empty() || path[0] == '/' || base.empty()) {
    return path;
  }
  return absl::StrCat(base, "/", path);
}

// `<key>-data` (base64 PEM) or `<key>` (a file path), into `out`.
absl::Status PemField(const YAML::Node& n, const std::string& key,
                      absl::string_view base, std::string& out) {
  if (n[key + "-data"]) {
    std::string decoded;
    if (!absl::Base64Unescape(n[key + "-data"].as<std::string>(), &decoded)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "-data is not valid base64"));
    }
    out = std::move(decoded);
  } else if (n[key]) {
    absl::StatusOr<std::string> f =
        ReadFile(Resolve(base, n[key].as<std::string>()));
    if (!f.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": ", f.status().message()));
    }
    out = std::move(*f);
  }
  return absl::OkStatus();
}

// The entry of `list` (clusters, users, contexts) named `name`.
YAML::Node Named(const YAML::Node& list, const std::string& name) {
  if (list && list.IsSequence()) {
    for (const YAML::Node& e : list) {
      if (e["name"] && e["name"].as<std::string>() == name) {
        return e;
      }
    }
  }
  return YAML::Node();
}

}  // namespace

absl::StatusOr<KubeConfig> KubeConfigFromYaml(absl::string_view yaml,
                                              absl::string_view base_dir,
                                              absl::string_view context) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig is not YAML: ", e.what()));
  }
  try {
    const std::string ctx_name =
        context.empty() ? root["current-context"].as<std::string>("")
                        : std::string(context);
    if (ctx_name.empty()) {
      return absl::InvalidArgumentError("kubeconfig has no current-context");
    }
    const YAML::Node ctx = Named(root["contexts"], ctx_name)["context"];
    if (!ctx) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubeconfig has no context '", ctx_name, "'"));
    }
    const std::string cluster_name = ctx["cluster"].as<std::string>("");
    const YAML::Node cluster = Named(root["clusters"], cluster_name)["cluster"];
    if (!cluster || !cluster["server"]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kubeconfig cluster '", cluster_name, "' has no server"));
    }
    KubeConfig c;
    c.server = cluster["server"].as<std::string>();
    c.insecure_skip_tls_verify =
        cluster["insecure-skip-tls-verify"].as<bool>(false);
    if (absl::Status st =
            PemField(cluster, "certificate-authority", base_dir, c.ca_pem);
        !st.ok()) {
      return st;
    }
    const std::string user_name = ctx["user"].as<std::string>("");
    const YAML::Node user = Named(root["users"], user_name)["user"];
    if (user) {
      if (absl::Status st =
              PemField(user, "client-certificate", base_dir, c.client_cert_pem);
          !st.ok()) {
        return st;
      }
      if (absl::Status st =
              PemField(user, "client-key", base_dir, c.client_key_pem);
          !st.ok()) {
        return st;
      }
      c.token = user["token"].as<std::string>("");
      if (user["tokenFile"]) {
        c.token_file = Resolve(base_dir, user["tokenFile"].as<std::string>());
      }
    }
    if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kubeconfig user '", user_name,
                       "' needs both client-certificate and client-key"));
    }
    return c;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig has a field of the wrong type: ", e.what()));
  }
}

absl::StatusOr<KubeConfig> KubeConfigFromFile(const std::string& path,
                                              absl::string_view context) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return text.status();
  }
  const size_t slash = path.rfind('/');
  return KubeConfigFromYaml(
      *text, slash == std::string::npos ? "" : path.substr(0, slash), context);
}

absl::StatusOr<KubeConfig> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr) {
    return absl::FailedPreconditionError(
        "not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  }
  KubeConfig c;
  const std::string h = host;
  c.server = absl::StrCat(
      "https://",
      h.find(':') != std::string::npos ? absl::StrCat("[", h, "]") : h, ":",
      port);
  c.token_file = sa_dir + "/token";
  absl::StatusOr<std::string> ca = ReadFile(sa_dir + "/ca.crt");
  if (!ca.ok()) {
    return ca.status();
  }
  c.ca_pem = std::move(*ca);
  return c;
}

}  // namespace pilotlight::kube
