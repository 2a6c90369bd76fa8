// PromDemand over a Prometheus answering on real HTTP: an endpoint's
// arrivals are the engines' rate times the time since its last read, so a
// read an activator's poke adds between two ticks counts only its share.
#include "controller/runtime/prom_demand.h"

#include <httplib.h>

#include <string>

#include "absl/strings/match.h"
#include "controller/prom/prom_client.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/fakes/fake_prometheus.h"

namespace pilotlight::runtime {
namespace {

// Every instant query: one series for pod ns/p1, 10 for the vLLM success
// counter's rate, 0 for the rest.
void Answer(const std::string& query, httplib::Response& res) {
  const bool rate = absl::StrContains(query, "request_success_total");
  res.set_content(std::string(R"({"status":"success","data":{)"
                              R"("resultType":"vector","result":[{)"
                              R"("metric":{"namespace":"ns","pod":"p1"},)"
                              R"("value":[1700000000,")") +
                      (rate ? "10" : "0") + R"("]}]}})",
                  "application/json");
}

TEST(PromDemandTest, ArrivalsAreTheRateTimesTheTimeSinceTheLastRead) {
  fakes::FakePrometheus fake(Answer);
  auto client = prom::PromClient::Create(fake.url());
  ASSERT_TRUE(client.ok()) << client.status();
  fakes::MemoryCache autoscalers;
  autoscalers.Put({{"apiVersion", "pilotlight.dev/v1alpha1"},
                   {"kind", "InferenceAutoscaler"},
                   {"metadata", {{"namespace", "ns"}, {"name", "chat"}}},
                   {"spec", {{"metrics", {{"server", "vllm"}}}}}});
  PromDemand demand(**client, absl::Minutes(1), absl::Seconds(2));
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  const PromDemand::RefreshStats stats = demand.Refresh(autoscalers, t0);
  ASSERT_TRUE(stats.errors.empty());
  api::AutoscalerResource ep;
  ep.spec.name = "ns/chat";
  std::string missing;
  const auto arrivals = [&](absl::Duration at) {
    return demand.Read(ep, {"ns/p1"}, t0 + at, missing).arrivals.value_or(-1);
  };
  EXPECT_DOUBLE_EQ(arrivals(absl::Seconds(2)), 20);  // first read: one tick
  // A poke half a second later, then the next tick: 20 over the tick, as
  // with no poke (each read at rate x tick counted 40).
  EXPECT_DOUBLE_EQ(arrivals(absl::Milliseconds(2500)), 5);
  EXPECT_DOUBLE_EQ(arrivals(absl::Seconds(4)), 15);
  // A long gap counts at most the rate window.
  EXPECT_DOUBLE_EQ(arrivals(absl::Minutes(10)), 600);
  // Deleted and made again: a new endpoint, whose first read is a tick.
  demand.Forget("ns/chat");
  EXPECT_DOUBLE_EQ(arrivals(absl::Minutes(10) + absl::Seconds(30)), 20);
  EXPECT_EQ(missing, "");
}

}  // namespace
}  // namespace pilotlight::runtime
