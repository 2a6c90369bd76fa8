#include "controller/kube/kube_config.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::kube {
namespace {

using ::testing::HasSubstr;

std::string Dir() { return ::testing::TempDir(); }

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

constexpr const char* kTwoContexts = R"(apiVersion: v1
kind: Config
current-context: test
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: ca.pem
- name: other
  cluster: {server: "https://[::1]:7443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {client-certificate: admin.crt, client-key: admin.key}
- name: robot
  user: {token: s3cret}
contexts:
- name: test
  context: {cluster: local, user: admin}
- name: bot
  context: {cluster: other, user: robot}
)";

// File references resolve against the kubeconfig's directory; the
// current context is used unless one is named.
TEST(KubeConfigTest, FilesRelativeToTheKubeconfig) {
  Write(Dir() + "/ca.pem", "CA PEM");
  Write(Dir() + "/admin.crt", "CERT PEM");
  Write(Dir() + "/admin.key", "KEY PEM");
  Write(Dir() + "/kubeconfig", kTwoContexts);
  absl::StatusOr<KubeConfig> c = KubeConfigFromFile(Dir() + "/kubeconfig");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT PEM");
  EXPECT_EQ(c->client_key_pem, "KEY PEM");

  absl::StatusOr<KubeConfig> bot =
      KubeConfigFromFile(Dir() + "/kubeconfig", "bot");
  ASSERT_TRUE(bot.ok()) << bot.status();
  EXPECT_EQ(bot->server, "https://[::1]:7443");
  EXPECT_TRUE(bot->insecure_skip_tls_verify);
  EXPECT_EQ(bot->token, "s3cret");
}

// Inline base64 data, and the errors that name what is wrong.
TEST(KubeConfigTest, DataFieldsAndErrors) {
  const std::string yaml = absl::StrCat(
      "current-context: c\n"
      "clusters: [{name: k, cluster: {server: 'https://h:1', "
      "certificate-authority-data: ",
      absl::Base64Escape("CA"),
      "}}]\n"
      "users: [{name: u, user: {client-certificate-data: ",
      absl::Base64Escape("CRT"),
      ", client-key-data: ", absl::Base64Escape("KEY"),
      "}}]\n"
      "contexts: [{name: c, context: {cluster: k, user: u}}]\n");
  absl::StatusOr<KubeConfig> c = KubeConfigFromYaml(yaml, "");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->client_key_pem, "KEY");

  struct Case {
    std::string yaml;
    const char* want;
  };
  const Case cases[] = {
      {"{", "not YAML"},
      {"clusters: []", "no current-context"},
      {"current-context: x\ncontexts: []", "no context 'x'"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {}}]",
       "has no server"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: k, user: "
       "u}}]\nclusters: [{name: k, cluster: {server: 'https://h'}}]\n"
       "users: [{name: u, user: {client-certificate-data: " +
           absl::Base64Escape("X") + "}}]",
       "needs both client-certificate and client-key"},
      {"current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
       "clusters: [{name: k, cluster: {server: 'https://h', "
       "certificate-authority: /nonexistent/ca.pem}}]",
       "certificate-authority: cannot read"},
  };
  for (const Case& k : cases) {
    absl::StatusOr<KubeConfig> r = KubeConfigFromYaml(k.yaml, "");
    ASSERT_FALSE(r.ok()) << k.want;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(k.want));
  }
}

// In a pod: the service host/port from the environment, the token file kept
// as a path (re-read on rotation), the CA from the service account.
TEST(KubeConfigTest, InCluster) {
  const std::string sa = Dir() + "/sa";
  std::system(("mkdir -p " + sa).c_str());
  Write(sa + "/token", "tok\n");
  Write(sa + "/ca.crt", "CA");
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  absl::StatusOr<KubeConfig> c = InClusterConfig(sa);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:443");
  EXPECT_EQ(c->token_file, sa + "/token");
  EXPECT_EQ(c->ca_pem, "CA");
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_FALSE(InClusterConfig(sa).ok());
}

}  // namespace
}  // namespace pilotlight::kube
