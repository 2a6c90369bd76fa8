// KedaScaler over real gRPC (in process, loopback): what KEDA's operator
// asks an external-push scaler, answered from a fake table of decisions.
#include "controller/api/keda_scaler.h"

#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace pilotlight::api {
namespace {

using externalscaler::ExternalScaler;
using externalscaler::ScaledObjectRef;

class KedaScalerTest : public ::testing::Test {
 protected:
  KedaScalerTest()
      : scaler_(
            [this](const std::string& endpoint)
                -> absl::StatusOr<KedaScaler::Variants> {
              const std::lock_guard<std::mutex> lock(mu_);
              if (endpoint == "ml/new") {
                return absl::FailedPreconditionError("not decided yet");
              }
              const auto it = decided_.find(endpoint);
              if (it == decided_.end()) {
                return absl::NotFoundError(
                    absl::StrCat("no InferenceAutoscaler ", endpoint));
              }
              return it->second;
            },
            absl::Seconds(30)) {  // a stream moves only when told
    decided_["ml/chat"] = {{"chat-l4", 0}, {"chat-a100", 0}};
    int port = 0;
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&scaler_);
    server_ = b.BuildAndStart();
    stub_ = ExternalScaler::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  ~KedaScalerTest() override {
    scaler_.Shutdown();
    server_->Shutdown();
  }
  void Decide(const std::string& deployment, int32_t replicas) {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      for (auto& v : decided_["ml/chat"]) {
        if (v.first == deployment) {
          v.second = replicas;
        }
      }
    }
    scaler_.Changed("ml/chat");
  }
  static ScaledObjectRef Ref(std::map<std::string, std::string> meta,
                             const std::string& name = "chat-so") {
    ScaledObjectRef r;
    r.set_name(name);
    r.set_namespace_("ml");
    for (const auto& [k, v] : meta) {
      (*r.mutable_scalermetadata())[k] = v;
    }
    return r;
  }

  std::mutex mu_;
  std::map<std::string, KedaScaler::Variants> decided_;
  KedaScaler scaler_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ExternalScaler::Stub> stub_;
};

TEST_F(KedaScalerTest, ActiveAndMetricFollowTheDecidedReplicas) {
  const ScaledObjectRef ref = Ref({{"autoscaler", "chat"}});
  externalscaler::IsActiveResponse active;
  {
    grpc::ClientContext c;
    ASSERT_TRUE(stub_->IsActive(&c, ref, &active).ok());
    EXPECT_FALSE(active.result());
  }
  externalscaler::GetMetricSpecResponse spec;
  {
    grpc::ClientContext c;
    ASSERT_TRUE(stub_->GetMetricSpec(&c, ref, &spec).ok());
  }
  ASSERT_EQ(spec.metricspecs_size(), 1);
  EXPECT_EQ(spec.metricspecs(0).metricname(), "pilotlight-chat-l4")
      << "the first variant by default";
  EXPECT_EQ(spec.metricspecs(0).targetsize(), 1);
  Decide("chat-l4", 3);
  externalscaler::GetMetricsRequest req;
  *req.mutable_scaledobjectref() = ref;
  req.set_metricname("s0-pilotlight-chat-l4");  // as KEDA names it
  externalscaler::GetMetricsResponse metrics;
  {
    grpc::ClientContext c;
    ASSERT_TRUE(stub_->GetMetrics(&c, req, &metrics).ok());
  }
  ASSERT_EQ(metrics.metricvalues_size(), 1);
  EXPECT_EQ(metrics.metricvalues(0).metricname(), "s0-pilotlight-chat-l4");
  EXPECT_EQ(metrics.metricvalues(0).metricvalue(), 3);
  {
    grpc::ClientContext c;
    ASSERT_TRUE(stub_->IsActive(&c, ref, &active).ok());
    EXPECT_TRUE(active.result());
  }
  // The other variant, by name and with the namespace spelled out.
  {
    grpc::ClientContext c;
    ASSERT_TRUE(stub_
                    ->IsActive(&c,
                               Ref({{"autoscaler", "ml/chat"},
                                    {"deployment", "chat-a100"}}),
                               &active)
                    .ok());
    EXPECT_FALSE(active.result());
  }
}

// A change is pushed at once: no polling interval between a decision and
// KEDA hearing of it.
TEST_F(KedaScalerTest, StreamPushesEachChangeAtOnce) {
  grpc::ClientContext c;
  const auto reader = stub_->StreamIsActive(&c, Ref({{"autoscaler", "chat"}}));
  externalscaler::IsActiveResponse m;
  ASSERT_TRUE(reader->Read(&m));
  EXPECT_FALSE(m.result()) << "the state now, first";
  for (const int32_t replicas : {1, 0}) {
    const absl::Time t0 = absl::Now();
    Decide("chat-l4", replicas);
    ASSERT_TRUE(reader->Read(&m));
    EXPECT_EQ(m.result(), replicas > 0);
    // The stream rechecks every 30 s here: only the push can be this soon.
    EXPECT_LT(absl::Now() - t0, absl::Seconds(5));
  }
  Decide("chat-a100", 2);  // another variant: nothing to say
  Decide("chat-l4", 2);
  ASSERT_TRUE(reader->Read(&m));
  EXPECT_TRUE(m.result());
  c.TryCancel();
}

TEST_F(KedaScalerTest, BadReferencesSayWhat) {
  const auto code = [&](const ScaledObjectRef& ref, std::string* msg) {
    grpc::ClientContext c;
    externalscaler::IsActiveResponse out;
    const grpc::Status s = stub_->IsActive(&c, ref, &out);
    *msg = s.error_message();
    return s.error_code();
  };
  std::string msg;
  EXPECT_EQ(code(Ref({{"autoscaler", "nope"}}), &msg),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(msg, "no InferenceAutoscaler ml/nope");
  EXPECT_EQ(code(Ref({{"autoscaler", "chat"}, {"deployment", "x"}}), &msg),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(msg,
            "trigger metadata: deployment \"x\" is no variant of "
            "InferenceAutoscaler ml/chat (its variants: chat-l4, chat-a100)");
  EXPECT_EQ(code(Ref({}, "chat"), &msg), grpc::StatusCode::OK)
      << "no autoscaler: the ScaledObject's own name";
  EXPECT_EQ(code(Ref({{"autoscaler", "new"}}), &msg),
            grpc::StatusCode::FAILED_PRECONDITION);
  // A stream on an unknown endpoint ends so (KEDA opens it again).
  grpc::ClientContext c;
  const auto reader = stub_->StreamIsActive(&c, Ref({{"autoscaler", "nope"}}));
  externalscaler::IsActiveResponse m;
  EXPECT_FALSE(reader->Read(&m));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace pilotlight::api
