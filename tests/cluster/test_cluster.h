// File: tests/cluster/test_cluster.h
//
// Where the local test cluster that ctest brought up (the cluster_up
// fixture, tests/cluster/CMakeLists.txt) is, for the integration tests:
// PILOTLIGHT_CLUSTER_DIR (set by ctest) or PILOTLIGHT_TEST_KUBECONFIG (a
// cluster started by hand). Tests skip, loudly, when neither is set.
#pragma once

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"

namespace pilotlight::testcluster {

inline std::optional<std::string> TestClusterDir() {
  const char* dir = std::getenv("PILOTLIGHT_CLUSTER_DIR");
  if (dir == nullptr || *dir == '\0') {
    return std::nullopt;
  }
  return std::string(dir);
}

inline std::optional<std::string> TestKubeconfig() {
  if (const char* path = std::getenv("PILOTLIGHT_TEST_KUBECONFIG");
      path != nullptr && *path != '\0') {
    return std::string(path);
  }
  if (std::optional<std::string> dir = TestClusterDir()) {
    return *dir + "/admin.kubeconfig";
  }
  return std::nullopt;
}

// The Prometheus that tests/cluster/up started ("" when unknown).
inline std::string TestPrometheusUrl() {
  std::optional<std::string> dir = TestClusterDir();
  if (!dir) {
    return "";
  }
  std::ifstream in(*dir + "/run/prometheus.url");
  std::stringstream s;
  s << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(s.str()));
}

}  // namespace pilotlight::testcluster
