// KEDA in front (label integration): the KEDA operator, built from its Go
// module by tests/cluster/build, scales the endpoint's Deployment through a
// ScaledObject whose `external-push` trigger names the controller's KEDA
// scaler (api::KedaScaler). The InferenceAutoscaler is annotated
// pilotlight.dev/scaled-by: keda, so KEDA alone writes the replicas. A
// burst at zero through the activator: held, the controller poked,
// StreamIsActive pushes, KEDA scales 0 -> 1 (not at its 30 s polling),
// every request answered with its own body; idle, back to zero.
#include <memory>
#include <string>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "tests/activator/activator_fixture.h"

namespace pilotlight::activator {
namespace {

using testcluster::Process;
using testcluster::WaitFor;

class KedaClusterTest : public ActivatorClusterTest {
 protected:
  // The KEDA operator, watching this test's namespace only (its own
  // objects there too), with a self-signed certificate for the metrics
  // gRPC server it always starts (nothing here calls it).
  std::unique_ptr<Process> StartKeda() const {
    const std::string bin = testcluster::CachedBinary("keda-operator");
    EXPECT_EQ(::access(bin.c_str(), X_OK), 0)
        << bin << " is missing: tests/cluster/build builds it";
    const std::string crds = testcluster::CachedBinary("keda-crds");
    const std::string applied = Shell(absl::StrCat(
        "kubectl --kubeconfig ", kubeconfig_,
        " apply --server-side --force-conflicts -f ", crds,
        " && kubectl --kubeconfig ", kubeconfig_,
        " wait --for condition=established --timeout=30s -f ", crds));
    EXPECT_THAT(applied, ::testing::HasSubstr("scaledobjects.keda.sh"));
    const std::string certs = LogPath("keda-certs");
    Shell(absl::StrCat(
        "mkdir -p ", certs, " && cd ", certs,
        " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "
        "/CN=keda -addext subjectAltName=IP:127.0.0.1 -keyout tls.key -out "
        "tls.crt 2>&1 && cp tls.crt ca.crt"));
    const std::vector<std::string> args = {
        absl::StrCat("POD_NAMESPACE=", ns_),
        absl::StrCat("WATCH_NAMESPACE=", ns_),
        absl::StrCat("KEDA_CLUSTER_OBJECT_NAMESPACE=", ns_),
        bin,
        "--kubeconfig",
        kubeconfig_,
        "--cert-dir",
        certs,
        "--ca-dir",
        certs,
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--metrics-service-bind-address",
        "127.0.0.1:0",
        "--enable-webhook-patching=false",
        "--enable-apiservice-patching=false",
        "--zap-encoder",
        "json"};
    return std::make_unique<Process>("/usr/bin/env", args, LogPath("keda"));
  }
  absl::Status CreateScaledObject(int controller_grpc_port) {
    return Request("POST",
                   absl::StrCat("/apis/keda.sh/v1alpha1/namespaces/", ns_,
                                "/scaledobjects"),
                   {{"apiVersion", "keda.sh/v1alpha1"},
                    {"kind", "ScaledObject"},
                    {"metadata", {{"name", "chat"}}},
                    {"spec",
                     {{"scaleTargetRef", {{"name", "chat-l4"}}},
                      {"minReplicaCount", 0},
                      {"maxReplicaCount", 4},
                      {"cooldownPeriod", 5},
                      {"triggers",
                       {{{"type", "external-push"},
                         {"metadata",
                          {{"scalerAddress", Local(controller_grpc_port)},
                           {"autoscaler", "chat"},
                           {"deployment", "chat-l4"}}}}}}}}})
        .status();
  }
  std::string ScaledObjectReady() {
    absl::StatusOr<json> so =
        Request("GET", absl::StrCat("/apis/keda.sh/v1alpha1/namespaces/", ns_,
                                    "/scaledobjects/chat"));
    return so.ok() ? Condition(*so, "Ready") : "";
  }
};

TEST_F(KedaClusterTest, KedaScalesFromZeroOnPilotlightsPushAndBack) {
  ASSERT_TRUE(CreateDeployment("chat-l4", 0, "l4", "on-demand").ok());
  ASSERT_TRUE(CreateAutoscaler("chat", OneVariantSpec("chat-l4", 0)).ok());
  ASSERT_TRUE(
      Request("PATCH",
              absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/", ns_,
                           "/inferenceautoscalers/chat"),
              {{"metadata",
                {{"annotations", {{"pilotlight.dev/scaled-by", "keda"}}}}}},
              "application/merge-patch+json")
          .ok());
  const std::unique_ptr<Process> controller = StartController();
  const int grpc_port = controller->LogInt("controller started", "grpc_port");
  ASSERT_GT(grpc_port, 0) << controller->Log();
  const std::unique_ptr<Process> activator = StartActivator(Local(grpc_port));
  const int port = activator->LogInt("activator started", "port");
  ASSERT_GT(port, 0) << activator->Log();
  const std::unique_ptr<Process> keda = StartKeda();
  ASSERT_TRUE(CreateScaledObject(grpc_port).ok());
  // The ScaledObject goes before KEDA does: its finalizer is KEDA's to
  // remove, and the namespace could not go without it.
  const absl::Cleanup scaled_object_gone = [&] {
    (void)Request("DELETE", absl::StrCat("/apis/keda.sh/v1alpha1/namespaces/",
                                         ns_, "/scaledobjects/chat"));
    WaitFor(absl::Seconds(20), [&] {
      return Request("GET", absl::StrCat("/apis/keda.sh/v1alpha1/"
                                         "namespaces/",
                                         ns_, "/scaledobjects/chat"))
                 .status()
                 .code() == absl::StatusCode::kNotFound;
    });
  };
  ASSERT_TRUE(WaitFor(absl::Seconds(60), [&] {
    return ScaledObjectReady() == "True" &&
           Condition(Autoscaler("chat"), "Ready") == "True";
  })) << keda->Log();
  ASSERT_EQ(Replicas("chat-l4"), 0);

  // 200 concurrent requests at zero; when the Deployment is asked for a
  // replica, measured from the first request sent.
  std::atomic<bool> done{false};
  absl::Duration to_scale = absl::InfiniteDuration();
  const absl::Time t0 = absl::Now();
  std::thread watch([&] {
    while (!done && Replicas("chat-l4") < 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    to_scale = absl::Now() - t0;
  });
  const std::vector<Outcome> burst = Burst(port, 200);
  done = true;
  watch.join();
  Report("burst at zero, KEDA scaling", burst);
  std::printf("first request -> KEDA's /scale patch: %s\n",
              absl::FormatDuration(to_scale).c_str());
  for (const Outcome& o : burst) {
    EXPECT_EQ(o.status, 200) << o.detail;
    EXPECT_TRUE(o.body_ok) << o.detail;
  }
  EXPECT_LT(to_scale, absl::Seconds(5))
      << "pushed, not at KEDA's 30 s polling\n"
      << keda->Log();
  // Idle: Pilotlight decides zero, the push says inactive, KEDA scales
  // down after its 5 s cooldown.
  EXPECT_TRUE(WaitFor(absl::Seconds(180), [&] {
    return Replicas("chat-l4") == 0;
  })) << controller->Log();
  // KEDA alone wrote this endpoint's replicas (the controller watches
  // every namespace: other tests' endpoints are its to scale).
  for (absl::string_view line : absl::StrSplit(controller->Log(), '\n')) {
    EXPECT_FALSE(absl::StrContains(line, "\"msg\":\"scaled\"") &&
                 absl::StrContains(line, absl::StrCat(ns_, "/chat")))
        << line;
  }
}

}  // namespace
}  // namespace pilotlight::activator
