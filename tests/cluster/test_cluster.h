// Where the local test cluster that ctest brought up (the cluster_up
// fixture, tests/cluster/CMakeLists.txt) is, for the integration tests:
// PILOTLIGHT_CLUSTER_DIR (set by ctest) or PILOTLIGHT_TEST_KUBECONFIG (a
// cluster started by hand). Tests skip, loudly, when neither is set.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace pilotlight::testcluster {

// Why a cluster test skips: the same words in every such test.
inline constexpr char kNoCluster[] =
    "no test cluster: run through ctest (the cluster_up fixture) or set "
    "PILOTLIGHT_TEST_KUBECONFIG";

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

// A URL tests/cluster/up wrote in its run/ folder ("" when unknown).
inline std::string TestClusterUrl(const std::string& file) {
  std::optional<std::string> dir = TestClusterDir();
  if (!dir) {
    return "";
  }
  std::ifstream in(*dir + "/run/" + file);
  std::stringstream s;
  s << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(s.str()));
}

// The Prometheus that tests/cluster/up started ("" when unknown).
inline std::string TestPrometheusUrl() {
  return TestClusterUrl("prometheus.url");
}

// The etcd behind the API server ("" when unknown): tests compact it.
inline std::string TestEtcdUrl() { return TestClusterUrl("etcd.url"); }

// A binary tests/cluster/build put in the cache (helm, prometheus, ...):
// ${PILOTLIGHT_CACHE:-$HOME/.cache/pilotlight}/bin/<name>.
inline std::string CachedBinary(const std::string& name) {
  const char* cache = std::getenv("PILOTLIGHT_CACHE");
  const char* home = std::getenv("HOME");
  const std::string dir =
      cache != nullptr && *cache != '\0'
          ? std::string(cache)
          : std::string(home != nullptr ? home : "") + "/.cache/pilotlight";
  return dir + "/bin/" + name;
}

// CachedBinary(name) when tests/cluster/build has built it, else "" (the
// tests that need it skip, naming the build step).
inline std::string BuiltTool(const std::string& name) {
  const std::string path = CachedBinary(name);
  return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
}

// Polls `done` every 250 ms until it is true or `limit` passes; returns
// its last answer.
inline bool WaitFor(absl::Duration limit, const std::function<bool()>& done) {
  const absl::Time end = absl::Now() + limit;
  while (absl::Now() < end) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return done();
}

// Runs a shell command; returns its output (stdout and stderr) and, when
// `rc` is given, sets it to the exit status.
inline std::string Shell(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    if (rc != nullptr) {
      *rc = -1;
    }
    return out;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
    out.append(buf, n);
  }
  const int status = ::pclose(p);
  if (rc != nullptr) {
    *rc = status;
  }
  return out;
}

}  // namespace pilotlight::testcluster
