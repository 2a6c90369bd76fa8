// The activators' demand on the controller side: the table (pokes, arrivals
// from totals, restarts, lost streams), its merge with Prometheus, and the
// gRPC service on a real loopback channel.
#include "controller/runtime/activator_demand.h"

#include <memory>
#include <vector>

#include "controller/api/demand_service.h"
#include "controller/runtime/merged_demand.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/kube/fake_clock.h"

namespace pilotlight::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kEp[] = "ml/llama";

// Activator incarnation `n`: started n microseconds after the controller
// (the fixture's clock when the table is made; n < 0: before it).
int64_t Inc(int64_t n) {
  return absl::ToUnixMicros(kube::FakeClock().Now()) + n;
}

ActivatorReport Report(const std::string& activator, int64_t incarnation,
                       bool full, EndpointDemand e) {
  ActivatorReport r{.activator = activator,
                    .incarnation = Inc(incarnation),
                    .full = full,
                    .draining = false,
                    .endpoints = {}};
  r.endpoints[kEp] = e;
  return r;
}

policy::DemandSample Prom(double in_flight, double queued, double arrivals) {
  policy::DemandSample s;
  s.in_flight = in_flight;
  s.queued = queued;
  s.arrivals = arrivals;
  return s;
}

class ActivatorDemandTest : public ::testing::Test {
 protected:
  kube::FakeClock clock_;
  ActivatorDemand table_{clock_, absl::Seconds(10), absl::Minutes(2)};
};

TEST_F(ActivatorDemandTest, StartupGraceIsNamedThenTrusted) {
  EXPECT_THAT(table_.Read(kEp).lost, HasSubstr("after start"));
  clock_.Advance(absl::Seconds(11));
  EXPECT_THAT(table_.Read(kEp).lost, IsEmpty());
}

TEST_F(ActivatorDemandTest, PokesOnHeldAtZeroOnlyOnceAFullReportRepeatsIt) {
  const EndpointDemand held{.arrivals_total = 1, .held = 1, .no_replica = true};
  // A poke report: reconcile now, and the epoch moves.
  EXPECT_THAT(table_.Apply(Report("a", 1, false, held)), ElementsAre(kEp));
  EXPECT_EQ(table_.Epoch(kEp), 1);
  // The next full report still holds: not a new poke (the tick has it).
  EXPECT_THAT(table_.Apply(Report("a", 1, true, held)), IsEmpty());
  // More arrive while still at zero: a poke report pokes again.
  EXPECT_THAT(
      table_.Apply(Report(
          "a", 1, false, {.arrivals_total = 5, .held = 5, .no_replica = true})),
      ElementsAre(kEp));
  // Held, but a replica is ready to take them: no poke.
  EXPECT_THAT(table_.Apply(Report(
                  "a", 1, false,
                  {.arrivals_total = 6, .held = 1, .no_replica = false})),
              IsEmpty());
  EXPECT_EQ(table_.Epoch(kEp), 2);
}

TEST_F(ActivatorDemandTest, ArrivalsAreCountedOnceFromTotals) {
  clock_.Advance(absl::Seconds(11));
  table_.Apply(Report("a", 1, true, {.arrivals_total = 10}));
  table_.Apply(Report("b", 7, true, {.arrivals_total = 4, .held = 2}));
  ActivatorRead r = table_.Read(kEp);
  EXPECT_EQ(r.arrivals, 14);
  EXPECT_EQ(r.held, 2);
  EXPECT_EQ(r.reporting, 2);
  // The same totals again (a repeated report): nothing new.
  table_.Apply(Report("a", 1, true, {.arrivals_total = 10}));
  EXPECT_EQ(table_.Read(kEp).arrivals, 0);
  // a restarted (new incarnation): its count starts again from zero.
  table_.Apply(Report("a", 2, true, {.arrivals_total = 3}));
  EXPECT_EQ(table_.Read(kEp).arrivals, 3);
  // An endpoint left out of a full report has no demand there any more.
  ActivatorReport empty{.activator = "b",
                        .incarnation = Inc(7),
                        .full = true,
                        .draining = false,
                        .endpoints = {}};
  table_.Apply(empty);
  EXPECT_EQ(table_.Read(kEp).held, 0);
}

// A controller that starts (or takes over as leader) while the activators
// run: their totals since they started are history. Read as arrivals since
// the last read, a day of them would be one tick's burst of demand; read
// as refusals, a start of the endpoint's own replica for a wake refused
// long ago.
TEST_F(ActivatorDemandTest, AnActivatorOlderThanTheControllerCountsFromHere) {
  clock_.Advance(absl::Seconds(11));
  const EndpointDemand first{.arrivals_total = 250000,
                             .held = 2,
                             .no_replica = true,
                             .wakes_refused_total = 4};
  // What it holds now is demand now: the poke stands.
  EXPECT_THAT(table_.Apply(Report("a", -1, false, first)), ElementsAre(kEp));
  ActivatorRead r = table_.Read(kEp);
  EXPECT_EQ(r.arrivals, 0);
  EXPECT_EQ(r.wakes_refused, 0);
  EXPECT_EQ(r.held, 2);
  // What comes after its first report counts.
  EXPECT_THAT(table_.Apply(Report("a", -1, true,
                                  {.arrivals_total = 250003,
                                   .in_flight = 3,
                                   .wakes_refused_total = 5})),
              ElementsAre(kEp));
  r = table_.Read(kEp);
  EXPECT_EQ(r.arrivals, 3);
  EXPECT_EQ(r.wakes_refused, 1);
  // Restarted after the controller: everything it reports is new.
  table_.Apply(Report("a", 5, true, {.arrivals_total = 7}));
  EXPECT_EQ(table_.Read(kEp).arrivals, 7);
}

// A wake of a pool engine refused at an activator pokes the endpoint at
// once (its engine is held, not at zero: no other poke), and reads once:
// counted from the activators' totals, as arrivals are.
TEST_F(ActivatorDemandTest, RefusedWakesPokeAndAreCountedOnceFromTotals) {
  clock_.Advance(absl::Seconds(11));
  EXPECT_THAT(
      table_.Apply(Report("a", 1, true, {.arrivals_total = 1, .in_flight = 1})),
      IsEmpty());
  EXPECT_THAT(
      table_.Apply(Report(
          "a", 1, false,
          {.arrivals_total = 1, .in_flight = 1, .wakes_refused_total = 1})),
      ElementsAre(kEp));
  table_.Apply(Report("b", 3, true, {.wakes_refused_total = 2}));
  EXPECT_EQ(table_.Read(kEp).wakes_refused, 3);
  // The same totals again: no poke, nothing new; one more: both.
  EXPECT_THAT(
      table_.Apply(Report(
          "a", 1, true,
          {.arrivals_total = 1, .in_flight = 1, .wakes_refused_total = 1})),
      IsEmpty());
  EXPECT_EQ(table_.Read(kEp).wakes_refused, 0);
  EXPECT_THAT(table_.Apply(Report("b", 3, false, {.wakes_refused_total = 3})),
              ElementsAre(kEp));
  EXPECT_EQ(table_.Read(kEp).wakes_refused, 1);
  // Left out of a full report (no demand there now): the total stays, and
  // nothing is counted again when it comes back.
  table_.Apply(ActivatorReport{.activator = "b",
                               .incarnation = Inc(3),
                               .full = true,
                               .draining = false,
                               .endpoints = {}});
  EXPECT_EQ(table_.Read(kEp).wakes_refused, 0);
  table_.Apply(Report("b", 3, true, {.wakes_refused_total = 3}));
  EXPECT_EQ(table_.Read(kEp).wakes_refused, 0);
}

TEST_F(ActivatorDemandTest,
       ALostStreamIsNamedAndNotCountedUntilItReconnectsOrIsForgotten) {
  clock_.Advance(absl::Seconds(11));
  table_.Apply(Report("a", 1, true, {.arrivals_total = 1, .in_flight = 1}));
  table_.Disconnected("a", Inc(1), /*clean=*/false);
  const ActivatorRead lost = table_.Read(kEp);
  EXPECT_THAT(lost.lost, HasSubstr("activator a: stream lost"));
  EXPECT_EQ(lost.in_flight, 0);  // its last report is stale
  table_.Apply(Report("a", 1, true, {.arrivals_total = 1}));
  EXPECT_THAT(table_.Read(kEp).lost, IsEmpty());
  // Lost again and never back: forgotten after forget_after.
  table_.Disconnected("a", Inc(1), /*clean=*/false);
  clock_.Advance(absl::Minutes(3));
  EXPECT_THAT(table_.Read(kEp).lost, IsEmpty());
  EXPECT_EQ(table_.Connected(), 0);
  // A goodbye (after draining) is not a loss.
  table_.Apply(Report("c", 1, true, {}));
  table_.Disconnected("c", Inc(1), /*clean=*/true);
  EXPECT_THAT(table_.Read(kEp).lost, IsEmpty());
  // An old stream's end does not mark a newer incarnation lost.
  table_.Apply(Report("d", 2, true, {}));
  table_.Disconnected("d", Inc(1), /*clean=*/false);
  EXPECT_THAT(table_.Read(kEp).lost, IsEmpty());
}

// The engines' latency window reaches the calibrator once per Prometheus
// refresh: a poke between two refreshes reads the same answers again, and
// handing that window on twice would double its weight (and reach the
// calibration's minimum count on half the tokens).
TEST_F(ActivatorDemandTest, EngineLatencyOncePerPrometheusRefresh) {
  fakes::FakeDemand prom;
  MergedDemand merged(prom, table_);
  api::AutoscalerResource ep;
  ep.spec.name = kEp;
  prom.Set([](absl::Time, int) {
    policy::DemandSample s = Prom(4, 0, 1);
    s.latency = policy::EngineLatency{.itl_s = 0.02, .itl_tokens = 100};
    return s;
  });
  std::string missing;
  const auto read = [&] {
    return merged.Read(ep, {}, clock_.Now(), missing).latency.has_value();
  };
  EXPECT_TRUE(read());
  EXPECT_FALSE(read());  // a poke: the same refresh
  EXPECT_FALSE(read());
  prom.NextEpoch();
  EXPECT_TRUE(read());  // the next refresh
  EXPECT_FALSE(read());
  // Demand itself is read every time.
  EXPECT_EQ(merged.Read(ep, {}, clock_.Now(), missing).in_flight, 4);
  // Deleted: its entry goes, and Prometheus's source is told. A new
  // endpoint of the same name is a new one: its first read has latency.
  merged.Forget(kEp);
  EXPECT_EQ(prom.forgotten(), std::vector<std::string>{kEp});
  EXPECT_TRUE(read());
}

TEST_F(ActivatorDemandTest, MergeCountsEachRequestOnce) {
  clock_.Advance(absl::Seconds(11));
  fakes::FakeDemand prom;
  MergedDemand merged(prom, table_);
  api::AutoscalerResource ep;
  ep.spec.name = kEp;
  struct Case {
    const char* name;
    policy::DemandSample prom;
    EndpointDemand act;
    double want_in_flight, want_queued, want_arrivals;
  };
  const std::vector<Case> cases = {
      // At zero: Prometheus sees nothing, the activator holds 3.
      {"held at zero",
       Prom(0, 0, 0),
       {.arrivals_total = 3, .held = 3, .no_replica = true},
       0,
       3,
       3},
      // Warm: 4 forwarded, the engines run 4 -> nothing added.
      {"forwarded and seen",
       Prom(4, 0, 5),
       {.arrivals_total = 7, .in_flight = 4},
       4,
       0,
       5},
      // 6 forwarded, engines report 4 running and 1 waiting (scrape lag):
      // the 6th counts as waiting, with the one at an engine and the one
      // held at the activator.
      {"forwarded, not yet scraped",
       Prom(4, 1, 1),
       {.arrivals_total = 13, .in_flight = 6, .held = 1},
       4,
       3,
       6},
      // New pods not scraped at all: the engines' signals are missing, the
      // 38 forwarded requests run (they are not a backlog).
      {"forwarded to pods Prometheus has not seen",
       policy::DemandSample{},
       {.arrivals_total = 51, .in_flight = 38},
       38,
       -1,
       38},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    prom.Set([&](absl::Time, int) { return c.prom; });
    table_.Apply(Report("a", 1, true, c.act));
    std::string missing;
    const policy::DemandSample s = merged.Read(ep, {}, clock_.Now(), missing);
    EXPECT_THAT(missing, IsEmpty());
    EXPECT_EQ(s.in_flight.value_or(-1), c.want_in_flight);
    EXPECT_EQ(s.queued.value_or(-1), c.want_queued);
    EXPECT_EQ(s.arrivals.value_or(-1), c.want_arrivals);
  }
  // Activator a lost, b holding 2: the sample is partial -- b's held
  // requests count (scale up for them), a's stale report does not, and
  // the policy will not scale down on it.
  prom.Set([&](absl::Time, int) { return Prom(0, 0, 0); });
  table_.Apply(Report("b", 1, true, {.arrivals_total = 2, .held = 2}));
  table_.Disconnected("a", Inc(1), false);
  std::string missing;
  const policy::DemandSample s = merged.Read(ep, {}, clock_.Now(), missing);
  EXPECT_THAT(missing, HasSubstr("stream lost"));
  EXPECT_TRUE(s.partial);
  EXPECT_EQ(s.queued.value_or(-1), 2);
  EXPECT_EQ(s.arrivals.value_or(-1), 2);
  // All connected again: a whole sample.
  table_.Apply(Report("a", 1, true, {.arrivals_total = 13}));
  missing.clear();
  EXPECT_FALSE(merged.Read(ep, {}, clock_.Now(), missing).partial);
  EXPECT_THAT(missing, IsEmpty());
  // The epoch moves with either source.
  const int64_t e0 = merged.Epoch(kEp);
  prom.NextEpoch();
  EXPECT_GT(merged.Epoch(kEp), e0);
}

// The gRPC service on a real loopback server: reports arrive in order, are
// acknowledged with the leader flag, malformed ones are refused naming the
// field, and a stream's end tells a goodbye from a loss.
class Receiver final : public api::DemandReceiver {
 public:
  void Apply(const api::ActivatorReport& r) override {
    const std::lock_guard<std::mutex> lock(mu);
    applied.push_back(r);
  }
  void Disconnected(const std::string& a, int64_t, bool clean) override {
    const std::lock_guard<std::mutex> lock(mu);
    ended.push_back(a + (clean ? ":clean" : ":lost"));
  }
  bool Leading() const override { return true; }
  std::mutex mu;
  std::vector<api::ActivatorReport> applied;
  std::vector<std::string> ended;
};

TEST(DemandServiceTest, StreamsReportsOverGrpc) {
  Receiver receiver;
  api::DemandService service(receiver);
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  ASSERT_NE(port, 0);
  auto stub = v1::Demand::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext ctx;
    auto stream = stub->Report(&ctx);
    v1::DemandReport r;
    r.set_activator("act-0");
    r.set_incarnation(42);
    r.set_sequence(1);
    v1::EndpointDemand* e = r.add_endpoints();
    e->set_namespace_("ml");
    e->set_name("llama");
    e->set_held(2);
    e->set_no_replica(true);
    e->set_wakes_refused_total(3);
    ASSERT_TRUE(stream->Write(r));
    v1::DemandAck ack;
    ASSERT_TRUE(stream->Read(&ack));
    EXPECT_EQ(ack.sequence(), 1);
    EXPECT_TRUE(ack.leading());
    r.set_sequence(2);
    r.set_draining(true);
    r.clear_endpoints();
    ASSERT_TRUE(stream->Write(r));
    ASSERT_TRUE(stream->Read(&ack));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  {
    grpc::ClientContext ctx;
    auto stream = stub->Report(&ctx);
    v1::DemandReport r;
    r.set_activator("act-1");
    r.add_endpoints()->set_name("no-namespace");
    ASSERT_TRUE(stream->Write(r));
    stream->WritesDone();
    const grpc::Status st = stream->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("endpoints[0]"));
  }
  server->Shutdown();
  ASSERT_EQ(receiver.applied.size(), 2U);
  EXPECT_EQ(receiver.applied[0].endpoints.at("ml/llama").held, 2);
  EXPECT_EQ(receiver.applied[0].endpoints.at("ml/llama").wakes_refused_total,
            3);
  EXPECT_THAT(receiver.ended, ElementsAre("act-0:clean"));
}

}  // namespace
}  // namespace pilotlight::runtime
