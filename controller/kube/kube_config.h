// KubeConfig: where the API server is and how to authenticate to it, from a
// kubeconfig file (its current context) or from inside a pod (the service
// account). Certificates and keys are held as PEM text; a token file is
// kept as a path so a rotated token is re-read (KubeClient does it on every
// request).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pilotlight::kube {

struct KubeConfig {
  std::string server;  // https://host:port
  std::string ca_pem;  // empty: system roots
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // bearer token (static)
  std::string token_file;  // bearer token re-read on each request
  bool insecure_skip_tls_verify = false;
};

// Parses a kubeconfig document; `base_dir` resolves relative file paths.
// Uses `context` or, when empty, the current-context. Errors name the
// missing or bad field.
absl::StatusOr<KubeConfig> KubeConfigFromYaml(absl::string_view yaml,
                                              absl::string_view base_dir,
                                              absl::string_view context = "");

// Reads a kubeconfig file.
absl::StatusOr<KubeConfig> KubeConfigFromFile(const std::string& path,
                                              absl::string_view context = "");

// In-cluster: KUBERNETES_SERVICE_HOST/PORT and the service account's token
// and CA under `sa_dir` (default /var/run/secrets/kubernetes.io/
// serviceaccount).
absl::StatusOr<KubeConfig> InClusterConfig(
    const std::string& sa_dir =
        "/var/run/secrets/kubernetes.io/serviceaccount");

}  // namespace pilotlight::kube
