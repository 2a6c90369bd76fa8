// The activator's HTTP front with real HTTP on loopback: a fake model
// server that streams slowly, and pods that appear late, refuse, or die.
#include "controller/activator/proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/http/front_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/loopback.h"
#include "tests/tools/model_server/model_server.h"

namespace pilotlight::activator {
namespace {

using ::testing::HasSubstr;

constexpr char kEp[] = "ml/llama";

// A model server: POST /v1/completions answers {"text":"ok <n>"}, or with
// "stream": true, `chunks` SSE events `gap` apart then [DONE]. On the
// activator's HTTP server, which closes idle kept-alive connections when
// it stops, as uvicorn (vLLM's) does: cpp-httplib's would wait out each
// connection the proxy keeps for reuse.
class FakeModel {
 public:
  explicit FakeModel(int chunks = 5,
                     absl::Duration gap = absl::Milliseconds(100))
      : chunks_(chunks),
        gap_(gap),
        server_({}, [this](const httplib::Request& req, httplib::Response& res,
                           int) { Serve(req, res); }) {
    port_ = *server_.Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { server_.Serve(); });
  }
  ~FakeModel() { Stop(); }
  void Stop() {
    server_.Stop();
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // The process dies: open responses break off, nothing more is served.
  void Kill() {
    dead_ = true;
    Stop();
  }

  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<int> aborted{0};
  // Connections requests came on (told apart by the client's port).
  size_t connections() {
    const std::lock_guard<std::mutex> lock(mu_);
    return ports_.size();
  }

 private:
  void Serve(const httplib::Request& req, httplib::Response& res) {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      ports_.insert(req.remote_port);
    }
    if (req.method != "POST" || req.path != "/v1/completions") {
      res.status = 404;
      res.set_content(absl::StrCat("no ", req.method, " ", req.path),
                      "text/plain");
      return;
    }
    ++started;
    res.status = 200;
    if (!absl::StrContains(req.body, "\"stream\": true")) {
      res.set_content(absl::StrCat("{\"text\":\"ok ", req.body, "\"}"),
                      "application/json");
      ++finished;
      return;
    }
    res.set_chunked_content_provider(
        "text/event-stream", [this](size_t, httplib::DataSink& sink) {
          for (int i = 0; i < chunks_; ++i) {
            const std::string ev = absl::StrCat("data: ", i, "\n\n");
            if (dead_) {
              return false;  // the connection closes mid-response
            }
            if (!sink.write(ev.data(), ev.size())) {
              ++aborted;
              return false;
            }
            absl::SleepFor(gap_);
          }
          const std::string done = "data: [DONE]\n\n";
          if (!sink.write(done.data(), done.size())) {
            ++aborted;
            return false;
          }
          ++finished;
          sink.done();
          return true;
        });
  }

  const int chunks_;
  const absl::Duration gap_;
  std::atomic<bool> dead_{false};
  std::mutex mu_;
  std::set<int> ports_;
  http::FrontServer server_;
  int port_ = 0;
  std::thread thread_;
};

// A port nothing listens on (bound once, then closed).
std::string DeadAddress() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return absl::StrCat("127.0.0.1:", ntohs(a.sin_port));
}

// A streamed completion through the front, its body to `receiver`.
httplib::Request StreamRequest(httplib::ContentReceiverWithProgress receiver) {
  httplib::Request req;
  req.method = "POST";
  req.path = "/ml/llama/v1/completions";
  req.body = R"({"stream": true})";
  req.headers.emplace("Content-Type", "application/json");
  req.content_receiver = std::move(receiver);
  return req;
}

// A streamed completion sent on `c`: what came of it, and its body.
struct Streamed {
  bool sent = false;  // the response ended well
  httplib::Error error = httplib::Error::Success;
  std::string body;
};
Streamed SendStream(httplib::Client& c) {
  Streamed s;
  httplib::Request req =
      StreamRequest([&](const char* d, size_t n, uint64_t, uint64_t) {
        s.body.append(d, n);
        return true;
      });
  httplib::Response res;
  s.sent = c.send(req, res, s.error);
  return s;
}

class ProxyTest : public ::testing::Test {
 protected:
  // `waker`: set before the front serves (no request may see it change).
  void Start(HoldLimits limits = {},
             absl::Duration activation = absl::Seconds(10),
             http::ClientWatch* watch = nullptr, Waker* waker = nullptr) {
    router_ = std::make_unique<Router>(
        limits, [this](const std::string&) { ++pokes_; });
    router_->SetEndpoints({kEp});
    EndpointTimeouts t;
    t.activation = activation;
    t.forward.response_start = absl::Seconds(5);
    t.forward.idle = absl::Seconds(2);
    proxy_ = std::make_unique<Proxy>(
        ProxyOptions{}, *router_, [t](const std::string&) { return t; },
        metrics_);
    proxy_->WatchClients(watch);
    proxy_->WakeEngines(waker);
    // The activator's own front, as it runs.
    http::FrontServerOptions o;
    o.max_body_bytes = ProxyOptions{}.max_body_bytes;
    front_ = std::make_unique<http::FrontServer>(
        o,
        [this](const httplib::Request& req, httplib::Response& res,
               int client_socket) { proxy_->Handle(req, res, client_socket); },
        [this](const httplib::Request& req, uint64_t bytes,
               httplib::Response& res) { proxy_->TooLarge(req, bytes, res); });
    port_ = *front_->Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { front_->Serve(); });
  }
  void TearDown() override { StopFront(); }
  // The front stopped and its threads joined: what they touched of the
  // test's own (a callback's captures) may go.
  void StopFront() {
    if (router_ != nullptr) {
      router_->Close();
    }
    if (front_ != nullptr) {
      front_->Stop();
    }
    if (thread_.joinable()) {
      thread_.join();
    }
    front_.reset();
  }
  // A client on a socket of its own: a completion request sent, its
  // connection left open (the caller closes it).
  int RawRequest() const {
    const int fd =
        testutil::PostAndLeaveOpen(port_, "/ml/llama/v1/completions", "{}");
    EXPECT_GE(fd, 0);
    return fd;
  }
  // Waits up to 5 s for the router's held and in-flight totals to reach
  // `held` and `in_flight` (-1: any), woken by their changes.
  bool Totals(int held, int in_flight) const {
    return router_->AwaitTotals(
        [&](int h, int f) {
          return (held < 0 || h == held) && (in_flight < 0 || f == in_flight);
        },
        absl::Seconds(5));
  }
  // Waits up to 5 s for `done` (a metric, the fake model's counts).
  static bool Eventually(const std::function<bool()>& done) {
    const absl::Time until = absl::Now() + absl::Seconds(5);
    while (!done() && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return done();
  }
  double Abandoned(const char* stage) {
    return metrics_.abandoned.Add({{"stage", stage}}).Value();
  }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30);
    return c;
  }
  // A client watch, started, that outlives the server: a handler still
  // finishing when the test body ends unregisters from it.
  http::ClientWatch& StartedWatch() {
    watch_ = std::make_unique<http::ClientWatch>(absl::Milliseconds(50));
    watch_->Start();
    return *watch_;
  }

  // Declared first: destroyed after the server and its handlers.
  std::unique_ptr<http::ClientWatch> watch_;
  prometheus::Registry registry_;
  Metrics metrics_{registry_};
  std::unique_ptr<Router> router_;
  std::atomic<int> pokes_{0};  // the controller told at once
  std::unique_ptr<Proxy> proxy_;
  std::unique_ptr<http::FrontServer> front_;
  int port_ = 0;
  std::thread thread_;
};

TEST(SplitTargetTest, EndpointAndRest) {
  std::string ep;
  std::string rest;
  ASSERT_TRUE(Proxy::SplitTarget("/ml/llama/v1/completions?x=1", ep, rest));
  EXPECT_EQ(ep, "ml/llama");
  EXPECT_EQ(rest, "/v1/completions?x=1");
  ASSERT_TRUE(Proxy::SplitTarget("/ml/llama", ep, rest));
  EXPECT_EQ(rest, "/");
  EXPECT_FALSE(Proxy::SplitTarget("/v1", ep, rest));
  EXPECT_FALSE(Proxy::SplitTarget("//x/y", ep, rest));
  EXPECT_FALSE(Proxy::SplitTarget("/ml//v1", ep, rest));
}

// 0 -> 1: 40 concurrent requests arrive with no pod; the pod appears later;
// every one is answered with its own body, none lost.
TEST_F(ProxyTest, NoRequestLostAcrossZeroToOne) {
  Start();
  FakeModel model;
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int i = 0; i < 40; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client c = Client();
      const std::string body = absl::StrCat("req-", i);
      httplib::Result r =
          c.Post("/ml/llama/v1/completions", body, "application/json");
      ASSERT_TRUE(r) << httplib::to_string(r.error());
      EXPECT_EQ(r->status, 200) << r->body;
      EXPECT_THAT(r->body, HasSubstr(absl::StrCat("ok ", body, "\"")));
      // Each waited for the pod that appeared after it came: a cold start,
      // held at least the 200 ms before it did.
      EXPECT_EQ(r->get_header_value(kColdStartHeader), "true");
      int64_t held_ms = 0;
      EXPECT_TRUE(absl::SimpleAtoi(r->get_header_value(kHeldHeader), &held_ms));
      EXPECT_GE(held_ms, 200);
      ok += r->status == 200 ? 1 : 0;
    });
  }
  ASSERT_TRUE(Totals(40, -1));
  EXPECT_TRUE(router_->DemandOf(kEp, absl::Now()).no_replica);
  absl::SleepFor(absl::Milliseconds(200));
  router_->SetTargets(kEp, {model.address()}, 4);
  for (std::thread& t : clients) {
    t.join();
  }
  EXPECT_EQ(ok.load(), 40);
  EXPECT_EQ(model.finished.load(), 40);
  EXPECT_EQ(router_->held_total(), 0);
}

TEST_F(ProxyTest, OverTheBoundIs429WithRetryAfterAndTheRestAreServed) {
  HoldLimits limits;
  limits.max_held_per_endpoint = 5;
  Start(limits);
  FakeModel model;
  std::vector<std::thread> clients;
  std::atomic<int> served{0};
  std::mutex mu;
  std::condition_variable answered;
  int refused = 0;
  for (int i = 0; i < 12; ++i) {
    clients.emplace_back([&] {
      httplib::Client c = Client();
      httplib::Result r = c.Post("/ml/llama/v1/completions", "x", "text/plain");
      ASSERT_TRUE(r);
      if (r->status == 429) {
        EXPECT_EQ(r->get_header_value("Retry-After"), "1");
        EXPECT_THAT(r->body, HasSubstr("hold queue full"));
        const std::lock_guard<std::mutex> lock(mu);
        ++refused;
        answered.notify_all();
      } else {
        EXPECT_EQ(r->status, 200);
        ++served;
      }
    });
  }
  ASSERT_TRUE(Totals(5, -1));
  {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(answered.wait_for(lock, std::chrono::seconds(5),
                                  [&] { return refused == 7; }));
  }
  router_->SetTargets(kEp, {model.address()}, 1);
  for (std::thread& t : clients) {
    t.join();
  }
  EXPECT_EQ(served.load(), 5);
  EXPECT_EQ(refused, 7);
}

TEST_F(ProxyTest, NoReplicaWithinTheActivationTimeoutIs503) {
  Start({}, absl::Milliseconds(200));
  httplib::Client c = Client();
  httplib::Result r = c.Post("/ml/llama/v1/completions", "x", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_FALSE(r->get_header_value("Retry-After").empty());
  EXPECT_THAT(r->body, HasSubstr("activation timeout"));
  r = c.Post("/ml/nope/v1/completions", "x", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

// The first SSE event reaches the client long before the upstream is done.
TEST_F(ProxyTest, StreamsUnbuffered) {
  Start();
  FakeModel model(5, absl::Milliseconds(200));
  router_->SetTargets(kEp, {model.address()}, 4);
  httplib::Client c = Client();
  const absl::Time t0 = absl::Now();
  absl::Time first;
  std::string got;
  httplib::Request req =
      StreamRequest([&](const char* d, size_t n, uint64_t, uint64_t) {
        if (got.empty()) {
          first = absl::Now();
        }
        got.append(d, n);
        return true;
      });
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  ASSERT_TRUE(c.send(req, res, err)) << httplib::to_string(err);
  const absl::Time end = absl::Now();
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.get_header_value("Content-Type"), "text/event-stream");
  // A pod was ready when it came: not a cold start, not held.
  EXPECT_EQ(res.get_header_value(kColdStartHeader), "false");
  EXPECT_EQ(res.get_header_value(kHeldHeader), "0");
  EXPECT_EQ(got,
            "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n"
            "data: [DONE]\n\n");
  // The upstream takes >= 1 s (5 x 200 ms); the first byte comes at once.
  EXPECT_GE(end - t0, absl::Milliseconds(1000));
  EXPECT_LT(first - t0, absl::Milliseconds(500));
}

// Requests one after another, streamed or not, go on one kept-alive
// connection to the pod: the first made, each next one reused.
TEST_F(ProxyTest, RequestsOneAfterAnotherShareOnePodConnection) {
  Start();
  FakeModel model(3, absl::Milliseconds(1));
  router_->SetTargets(kEp, {model.address()}, 4);
  httplib::Client c = Client();
  for (int i = 0; i < 6; ++i) {
    if (i % 2 == 0) {
      const std::string body = absl::StrCat("r", i);
      httplib::Result r =
          c.Post("/ml/llama/v1/completions", body, "application/json");
      ASSERT_TRUE(r) << httplib::to_string(r.error());
      EXPECT_EQ(r->status, 200);
      EXPECT_THAT(r->body, HasSubstr(absl::StrCat("ok ", body, "\"")));
      continue;
    }
    const Streamed got = SendStream(c);
    ASSERT_TRUE(got.sent) << httplib::to_string(got.error);
    EXPECT_EQ(got.body, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
  }
  EXPECT_EQ(model.finished.load(), 6);
  EXPECT_EQ(model.connections(), 1U);
  auto connections = [this](const char* how) {
    return metrics_.upstream_connections.Add({{"how", how}}).Value();
  };
  EXPECT_EQ(connections("new"), 1);
  EXPECT_EQ(connections("reused"), 5);
  EXPECT_EQ(connections("stale"), 0);
}

// A client that goes away mid-stream cancels the upstream request.
TEST_F(ProxyTest, ClientDisconnectCancelsUpstream) {
  Start();
  FakeModel model(50, absl::Milliseconds(50));
  router_->SetTargets(kEp, {model.address()}, 4);
  httplib::Client c = Client();
  int chunks = 0;
  httplib::Request req =
      StreamRequest([&](const char*, size_t, uint64_t, uint64_t) {
        return ++chunks < 2;  // hang up after the second chunk
      });
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  c.send(req, res, err);
  EXPECT_EQ(err, httplib::Error::Canceled);
  EXPECT_TRUE(Eventually([&] { return model.aborted.load() == 1; }));
  EXPECT_EQ(model.finished.load(), 0);
  EXPECT_TRUE(Totals(-1, 0));  // its slot is free again
}

// A pod that refuses the connection (its port not open yet, or its
// process gone) is taken out before any byte: the request is held again and
// served by the next pod.
TEST_F(ProxyTest, RefusedConnectionIsRetriedOnAnotherPod) {
  Start();
  FakeModel model;
  router_->SetTargets(kEp, {DeadAddress()}, 4);
  std::thread client([&] {
    httplib::Client c = Client();
    httplib::Result r = c.Post("/ml/llama/v1/completions", "x", "text/plain");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  });
  ASSERT_TRUE(Totals(1, -1));
  EXPECT_TRUE(router_->DemandOf(kEp, absl::Now()).no_replica);
  router_->SetTargets(kEp, {model.address()}, 4);
  client.join();
  EXPECT_EQ(metrics_.retries.Value(), 1);
  EXPECT_EQ(model.finished.load(), 1);
  // One request, one arrival in the demand, however many pods it tried.
  EXPECT_EQ(router_->DemandOf(kEp, absl::Now()).arrivals_total, 1);
}

// A client's retry (the OpenAI SDKs mark it: X-Stainless-Retry-Count > 0)
// is served like any request but not counted again in the demand: its
// first try was. A first try (0) and a header that is not a count are
// arrivals.
TEST_F(ProxyTest, ClientRetriesAreServedAndCountedOnce) {
  Start();
  FakeModel model;
  router_->SetTargets(kEp, {model.address()}, 4);
  httplib::Client c = Client();
  const auto post = [&](const char* retry_count) {
    httplib::Headers h;
    if (retry_count != nullptr) {
      h.emplace("X-Stainless-Retry-Count", retry_count);
    }
    httplib::Result r =
        c.Post("/ml/llama/v1/completions", h, "x", "text/plain");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  };
  const auto arrivals = [&] {
    return router_->DemandOf(kEp, absl::Now()).arrivals_total;
  };
  const auto client_retries = [&] {
    return metrics_.client_retries.Add({{"endpoint", kEp}}).Value();
  };
  post(nullptr);
  EXPECT_EQ(arrivals(), 1);
  post("1");
  post("2");
  EXPECT_EQ(arrivals(), 1);
  EXPECT_EQ(client_retries(), 2);
  post("0");
  post("two");
  EXPECT_EQ(arrivals(), 3);
  EXPECT_EQ(client_retries(), 2);
  EXPECT_EQ(model.finished.load(), 5);
}

// A pod that dies mid-stream: the client sees the stream end early (no
// [DONE]), promptly -- not a hang -- and nothing is retried.
TEST_F(ProxyTest, PodDyingMidStreamEndsTheResponsePromptly) {
  Start();
  auto model = std::make_unique<FakeModel>(100, absl::Milliseconds(50));
  router_->SetTargets(kEp, {model->address()}, 4);
  std::thread killer([&] {
    absl::SleepFor(absl::Milliseconds(300));
    model->Kill();
  });
  httplib::Client c = Client();
  const absl::Time t0 = absl::Now();
  const Streamed got = SendStream(c);
  killer.join();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(4));
  EXPECT_THAT(got.body, HasSubstr("data: 0"));
  EXPECT_THAT(got.body, ::testing::Not(HasSubstr("[DONE]")));
  EXPECT_EQ(model->started.load(), 1);
}

// A client that hangs up while held leaves the hold at once: it is no
// longer demand, nor a place in the bound, nor sent to the pod that comes
// (without the watch it stayed held until the activation timeout, 10 s).
TEST_F(ProxyTest, ClientThatHangsUpWhileHeldLeavesTheHold) {
  http::ClientWatch& watch = StartedWatch();
  Start({}, absl::Seconds(10), &watch);
  const int stays = RawRequest();
  const int leaves = RawRequest();
  ASSERT_TRUE(Totals(2, -1));
  ::close(leaves);
  ASSERT_TRUE(Totals(1, -1));
  // The hold ends in the router before the handler's thread counts it.
  EXPECT_TRUE(Eventually([&] { return Abandoned("held") == 1; }));
  EXPECT_EQ(router_->DemandOf(kEp, absl::Now()).arrivals_total, 2);
  // The one still there is served when a pod comes; the pod sees one.
  FakeModel model;
  router_->SetTargets(kEp, {model.address()}, 4);
  std::string answer(4096, '\0');
  const ssize_t n = ::recv(stays, answer.data(), answer.size(), 0);
  ASSERT_GT(n, 0);
  EXPECT_THAT(answer.substr(0, static_cast<size_t>(n)),
              HasSubstr("HTTP/1.1 200"));
  ::close(stays);
  EXPECT_EQ(model.started.load(), 1);
  EXPECT_EQ(Abandoned("sent"), 0);
}

// A client that hangs up after its request went to a pod that has not
// answered (a long prefill) cancels the pod's request; the pod is not
// taken out for it.
TEST_F(ProxyTest, ClientThatHangsUpBeforeThePodAnswersCancelsIt) {
  // A pod that takes connections and never answers.
  int pod_port = 0;
  const int pod = testutil::ListenLoopback(pod_port);
  ASSERT_GE(pod, 0);
  http::ClientWatch& watch = StartedWatch();
  Start({}, absl::Seconds(10), &watch);
  router_->SetTargets(kEp, {absl::StrCat("127.0.0.1:", pod_port)}, 4);
  const int client = RawRequest();
  const int upstream = ::accept(pod, nullptr, nullptr);
  ASSERT_GE(upstream, 0);
  ::close(client);
  // The pod's connection is shut: its read ends (the request's bytes,
  // then the end).
  std::string buf(4096, '\0');
  const absl::Time t0 = absl::Now();
  while (::recv(upstream, buf.data(), buf.size(), 0) > 0) {
  }
  EXPECT_LT(absl::Now() - t0, absl::Seconds(3));
  ASSERT_TRUE(Eventually([&] { return Abandoned("sent") == 1; }));
  EXPECT_TRUE(router_->TakeRemoved().empty());
  EXPECT_TRUE(Totals(-1, 0));
  ::close(upstream);
  ::close(pod);
}

// Sleeping engines (vLLM's sleep mode): the model-server stand-in, put to
// sleep, as the pod.
class SleepingEngineTest : public ProxyTest {
 protected:
  static constexpr double kScale = 0.2;  // a wake of ~0.23 s
  // An engine with sleep mode, on `gpu` when given, asleep from the start;
  // the fixture's until the test has ended (its server stopped first).
  tools::ModelServer* Engine(const std::string& name,
                             std::shared_ptr<tools::SharedGpu> gpu = nullptr,
                             bool asleep = true, double scale = kScale,
                             bool wake_fails = false) {
    tools::ModelServerOptions o;
    o.time_scale = scale;
    o.wake_fails = wake_fails;
    o.enable_sleep_mode = true;
    o.served_model_name = name;
    o.gpu = std::move(gpu);
    o.start_asleep = asleep;
    absl::StatusOr<std::unique_ptr<tools::ModelServer>> s =
        tools::ModelServer::Create(o);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) {
      return nullptr;
    }
    owned_.push_back(*std::move(s));
    return owned_.back().get();
  }
  // Serves `s` until the test ends; its address.
  std::string Serve(tools::ModelServer& s) {
    const int port = *s.Bind();
    serving_.emplace_back([&s] { s.Serve(); });
    return absl::StrCat("127.0.0.1:", port);
  }
  void TearDown() override {
    ProxyTest::TearDown();
    proxy_.reset();  // its kept connections to the engines close
    for (const std::unique_ptr<tools::ModelServer>& s : owned_) {
      s->Stop();
    }
    for (std::thread& t : serving_) {
      t.join();
    }
    owned_.clear();
  }
  // Two engines on one 80 GiB GPU (200 GiB of host memory), served until
  // the test ends: "other" awake, holding the GPU, and "llama" asleep.
  struct EnginePair {
    std::string awake;
    std::string asleep;
  };
  std::optional<EnginePair> EnginesSharingAGpu() {
    auto gpu = std::make_shared<tools::SharedGpu>(80, 200);
    tools::ModelServer* awake = Engine("other", gpu, false);
    tools::ModelServer* asleep = Engine("llama", gpu, true);
    if (awake == nullptr || asleep == nullptr) {
      return std::nullopt;
    }
    return EnginePair{Serve(*awake), Serve(*asleep)};
  }
  static bool Asleep(const std::string& address) {
    httplib::Client c("http://" + address);
    const httplib::Result r = c.Get("/is_sleeping");
    return r && r->status == 200 &&
           absl::StrContains(r->body, "\"is_sleeping\":true");
  }
  // The front, waking engines, with `pod` the endpoint's one target; a
  // completion sent through it.
  void StartWaking(const std::string& pod, int cap = 4,
                   absl::Duration activation = absl::Seconds(10),
                   Waker* waker = nullptr) {
    Start({}, activation, nullptr, waker != nullptr ? waker : &waker_);
    router_->SetTargets(kEp, {pod}, cap);
  }
  httplib::Result Hello() const {
    return Client().Post("/ml/llama/v1/completions",
                         R"({"prompt": "hello", "max_tokens": 3})",
                         "application/json");
  }
  // Hello(), with `meanwhile` done 0.5 s after it was sent: served (200)
  // after that, before the activation timeout.
  void ServedOnceDone(const std::function<void()>& meanwhile) {
    std::thread later([&meanwhile] {
      absl::SleepFor(absl::Milliseconds(500));
      meanwhile();
    });
    const absl::Time t0 = absl::Now();
    const httplib::Result r = Hello();
    later.join();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_GE(absl::Now() - t0, absl::Milliseconds(500));
    EXPECT_LT(absl::Now() - t0, absl::Seconds(5))
        << "not the activation timeout";
  }
  double Wakes(const char* result) {
    return metrics_.wakes.Add({{"endpoint", kEp}, {"result", result}}).Value();
  }

  Waker waker_;
  std::vector<std::unique_ptr<tools::ModelServer>> owned_;
  std::vector<std::thread> serving_;
};

// A request for an engine asleep is held while the activator wakes it,
// then served: 200, the wake in its hold time, the engine awake after.
TEST_F(SleepingEngineTest, AsleepEngineIsWokenAndTheRequestServed) {
  tools::ModelServer* engine = Engine("llama");
  ASSERT_NE(engine, nullptr);
  const std::string pod = Serve(*engine);
  ASSERT_TRUE(Asleep(pod));
  StartWaking(pod);
  const httplib::Result r = Hello();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(r->body, HasSubstr("tok2"));
  int64_t held_ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(r->get_header_value(kHeldHeader), &held_ms));
  EXPECT_GE(held_ms, absl::ToInt64Milliseconds(engine->wake_time() * kScale));
  EXPECT_FALSE(Asleep(pod));
  EXPECT_EQ(Wakes("woken"), 1);
  EXPECT_EQ(waker_.wakes(), 1);
}

// Many requests at once for one engine asleep: one wake, all served.
TEST_F(SleepingEngineTest, RequestsAtASleepingEngineShareOneWake) {
  tools::ModelServer* engine = Engine("llama");
  ASSERT_NE(engine, nullptr);
  const std::string pod = Serve(*engine);
  StartWaking(pod, 64);
  constexpr int kRequests = 24;
  std::atomic<int> served = 0;
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      const httplib::Result r = Client().Post(
          "/ml/llama/v1/completions",
          absl::StrCat(R"({"prompt": "request )", i, R"(", "max_tokens": 2})"),
          "application/json");
      if (r && r->status == 200 && absl::StrContains(r->body, "tok1")) {
        ++served;
      }
    });
  }
  for (std::thread& c : clients) {
    c.join();
  }
  EXPECT_EQ(served, kRequests);
  EXPECT_EQ(waker_.wakes(), 1);
  EXPECT_EQ(Wakes("woken"), 1);
  EXPECT_FALSE(Asleep(pod));
}

// A wake the pod refuses -- another engine awake holds the GPU, and the
// activator knows of no neighbour to put to sleep -- is asked again until
// the activation timeout, then answered 503 with Retry-After and what the
// pod said; nothing is lost silently, and the engine awake is left alone.
TEST_F(SleepingEngineTest, AWakeRefusedIs503WithWhatThePodSaid) {
  const std::optional<EnginePair> engines = EnginesSharingAGpu();
  ASSERT_TRUE(engines.has_value());
  const std::string& pod = engines->asleep;
  StartWaking(pod, 4, absl::Seconds(2));
  const absl::Time t0 = absl::Now();
  const httplib::Result r = Hello();
  ASSERT_TRUE(r);
  EXPECT_GE(absl::Now() - t0, absl::Seconds(2)) << "asked again until then";
  EXPECT_EQ(r->status, 503);
  EXPECT_FALSE(r->get_header_value("Retry-After").empty());
  EXPECT_THAT(r->body, HasSubstr("is asleep and did not wake: POST /wake_up "
                                 "answered 507: GPU memory taken"));
  EXPECT_THAT(r->body, HasSubstr("tries by the activation timeout"));
  // Each refusal counted in the demand (the controller falls back on it),
  // and the controller told at once.
  const int64_t refused =
      router_->DemandOf(kEp, absl::Now()).wakes_refused_total;
  EXPECT_GE(refused, 2);
  EXPECT_GE(pokes_, refused);
  EXPECT_EQ(Wakes("failed"), 1);
  EXPECT_EQ(metrics_.rejections.Add({{"reason", "wake_failed"}}).Value(), 1);
  EXPECT_TRUE(Asleep(pod));
  EXPECT_FALSE(Asleep(engines->awake));
}

// A wake refused is asked again: once the GPU has room (its neighbour
// went to sleep of its own), the wake goes through and the request is
// served, not answered 503.
TEST_F(SleepingEngineTest, AWakeRefusedIsAskedAgainAndServed) {
  const std::optional<EnginePair> engines = EnginesSharingAGpu();
  ASSERT_TRUE(engines.has_value());
  const std::string& pod = engines->asleep;
  StartWaking(pod);
  ServedOnceDone([&engines] {
    httplib::Client c("http://" + engines->awake);
    c.Post("/sleep?level=1", "", "text/plain");
  });
  EXPECT_EQ(Wakes("woken"), 1);
  EXPECT_FALSE(Asleep(pod));
  EXPECT_TRUE(Asleep(engines->awake));
}

// A pool of two pods, each with the endpoint's engine asleep: the one the
// request went to refuses every wake (a broken engine). Once the other is
// a target the request goes there and is served by its engine, woken; the
// broken one goes after it for the requests that follow.
TEST_F(SleepingEngineTest, AWakeRefusedGoesToTheEndpointsEngineOnAnotherPod) {
  tools::ModelServer* broken = Engine("llama", nullptr, true, kScale, true);
  tools::ModelServer* healthy = Engine("llama");
  ASSERT_NE(broken, nullptr);
  ASSERT_NE(healthy, nullptr);
  const std::string pod = Serve(*broken);
  const std::string other = Serve(*healthy);
  StartWaking(pod);
  ServedOnceDone([this, &pod, &other] {
    router_->SetTargets(kEp, {pod, other}, 4);
  });
  EXPECT_TRUE(Asleep(pod));
  EXPECT_FALSE(Asleep(other));
  EXPECT_GE(router_->DemandOf(kEp, absl::Now()).wakes_refused_total, 1);
  EXPECT_EQ(Wakes("gave_way"), 1);
  EXPECT_EQ(Wakes("woken"), 1);
  // The next request goes to the engine awake, not the broken one.
  const httplib::Result r = Hello();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Wakes("woken") + Wakes("failed") + Wakes("gave_way"), 2);
  EXPECT_TRUE(router_->TakeRemoved().empty()) << "nothing taken out";
}

// A client that gives up on a request whose wake keeps being refused ends
// the wake: nothing is asked of the pod for a request no one waits for
// (the retries would go on until the activation timeout).
TEST_F(SleepingEngineTest, AWakeNobodyWaitsForAnyMoreIsGivenUp) {
  const std::optional<EnginePair> engines = EnginesSharingAGpu();
  ASSERT_TRUE(engines.has_value());
  const std::string& pod = engines->asleep;
  http::ClientWatch& watch = StartedWatch();
  Start({}, absl::Seconds(30), &watch, &waker_);
  router_->SetTargets(kEp, {pod}, 4);
  httplib::Client c = Client();
  c.set_read_timeout(1, 0);  // gives up after a second
  const httplib::Result r =
      c.Post("/ml/llama/v1/completions",
             R"({"prompt": "hello", "max_tokens": 3})", "application/json");
  EXPECT_FALSE(r) << "answered " << r->status;
  ASSERT_TRUE(Eventually([&] { return Abandoned("sent") == 1; }));
  const int64_t refused =
      router_->DemandOf(kEp, absl::Now()).wakes_refused_total;
  EXPECT_GE(refused, 1);
  // Asked again at 3.75 s and 7.75 s were anyone still waiting.
  absl::SleepFor(absl::Seconds(5));
  EXPECT_EQ(router_->DemandOf(kEp, absl::Now()).wakes_refused_total, refused);
  EXPECT_EQ(Wakes("failed"), 1);
  EXPECT_TRUE(Asleep(pod));
}

// Engines on one pool pod share its GPU: a wake refused for want of GPU
// memory puts an idle neighbour to sleep, then wakes, and the request is
// served; the controller hears of the wake at once.
TEST_F(SleepingEngineTest, AWakeMakesRoomByPuttingAnIdleNeighbourToSleep) {
  const std::optional<EnginePair> engines = EnginesSharingAGpu();
  ASSERT_TRUE(engines.has_value());
  const std::string& neighbour = engines->awake;
  const std::string& pod = engines->asleep;
  std::mutex mu;  // the callback runs on the front's threads
  std::vector<std::string> asked;
  Waker room({}, [&](const std::string& address) {
    const std::lock_guard<std::mutex> lock(mu);
    asked.push_back(address);
    return Waker::Neighbours{.idle = {neighbour}, .busy = 0};
  });
  StartWaking(pod, 4, absl::Seconds(10), &room);
  const httplib::Result r = Hello();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(r->body, HasSubstr("tok2"));
  {
    const std::lock_guard<std::mutex> lock(mu);
    EXPECT_THAT(asked, ::testing::ElementsAre(pod));
  }
  EXPECT_FALSE(Asleep(pod));
  EXPECT_TRUE(Asleep(neighbour));
  EXPECT_EQ(Wakes("woken"), 1);
  EXPECT_EQ(metrics_.room_sleeps.Add({{"endpoint", kEp}}).Value(), 1);
  EXPECT_EQ(pokes_, 1);
  StopFront();  // before `room` and what its callback reads go
}

// No neighbour idle yet (their requests run): the wake waits for one, and
// is answered 503 only when none is by the activation timeout.
TEST_F(SleepingEngineTest, AWakeWaitsForANeighbourToBeIdle) {
  const std::optional<EnginePair> engines = EnginesSharingAGpu();
  ASSERT_TRUE(engines.has_value());
  const std::string& neighbour = engines->awake;
  const std::string& pod = engines->asleep;
  std::atomic<bool> idle{false};
  Waker room({}, [&](const std::string&) {
    return idle ? Waker::Neighbours{.idle = {neighbour}, .busy = 0}
                : Waker::Neighbours{.idle = {}, .busy = 1};
  });
  StartWaking(pod, 4, absl::Seconds(2), &room);
  // Never idle within the activation timeout: 503, and why.
  httplib::Result r = Hello();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_THAT(r->body, HasSubstr("no other engine of the pod was idle to put "
                                 "to sleep by the activation timeout"));
  EXPECT_EQ(router_->DemandOf(kEp, absl::Now()).wakes_refused_total, 0)
      << "waiting for room is not a refusal";
  EXPECT_TRUE(Asleep(pod));
  // Idle 0.5 s into the wait: served after it.
  std::thread later([&idle] {
    absl::SleepFor(absl::Milliseconds(500));
    idle = true;
  });
  const absl::Time t0 = absl::Now();
  r = Hello();
  later.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_GE(absl::Now() - t0, absl::Milliseconds(500));
  EXPECT_TRUE(Asleep(neighbour));
  EXPECT_FALSE(Asleep(pod));
  StopFront();  // before `room` and what its callback reads go
}

// A wake waiting for room on a GPU its neighbour keeps busy, or refused
// (no neighbour known to put to sleep), gives way when the endpoint's
// targets no longer name the engine (the controller started a replica of
// the endpoint's own, which is Ready): the request is held again and
// served there, not answered 503 at the activation timeout; the engine is
// left asleep.
TEST_F(SleepingEngineTest, AWakeWaitingForRoomGivesWayToTheEndpointsOwnPod) {
  // The neighbour is never idle.
  Waker room({}, [](const std::string&) {
    return Waker::Neighbours{.idle = {}, .busy = 1};
  });
  Waker no_neighbours;
  for (Waker* waker : {&room, &no_neighbours}) {
    SCOPED_TRACE(waker == &room ? "waiting for room" : "refused");
    const std::optional<EnginePair> engines = EnginesSharingAGpu();
    ASSERT_TRUE(engines.has_value());
    const std::string& pod = engines->asleep;
    tools::ModelServer* own = Engine("llama", nullptr, false);
    ASSERT_NE(own, nullptr);
    const std::string own_pod = Serve(*own);
    StartWaking(pod, 4, absl::Seconds(10), waker);
    ServedOnceDone(
        [this, &own_pod] { router_->SetTargets(kEp, {own_pod}, 4); });
    EXPECT_TRUE(Asleep(pod));
    EXPECT_FALSE(Asleep(engines->awake));
    EXPECT_TRUE(router_->TakeRemoved().empty()) << "nothing taken out";
    StopFront();  // before `waker` goes, and before the next front
  }
}

// A request that meets an engine falling asleep (its weights still going
// out, /is_sleeping still false) is held until it is asleep, then woken
// and served: not the engine's 503.
TEST_F(SleepingEngineTest, ARequestMeetingAnEngineFallingAsleepIsServed) {
  // Slowed down: the weights take ~0.6 s to go out.
  tools::ModelServer* engine = Engine("llama", nullptr, false, 1.0);
  ASSERT_NE(engine, nullptr);
  const std::string pod = Serve(*engine);
  StartWaking(pod);
  std::thread sleep([&pod] {
    httplib::Client c("http://" + pod);
    c.Post("/sleep?level=1", "", "text/plain");
  });
  absl::SleepFor(absl::Milliseconds(100));
  const httplib::Result r = Hello();
  sleep.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Wakes("woken"), 1);
  EXPECT_FALSE(Asleep(pod));
}

// A wake that fails with vLLM's 500 while no neighbour is busy and none is
// awake to put to sleep is not for want of room: it is a refusal, asked
// again and counted in the demand (the controller falls back on it), not
// a silent wait for room until the activation timeout.
TEST_F(SleepingEngineTest, A500WithNoNeighbourAwakeIsARefusalNotAWaitForRoom) {
  // Both asleep on one GPU; llama's wake fails (500) however much room.
  auto gpu = std::make_shared<tools::SharedGpu>(80, 200);
  tools::ModelServer* other = Engine("other", gpu);
  tools::ModelServer* broken = Engine("llama", gpu, true, kScale, true);
  ASSERT_NE(other, nullptr);
  ASSERT_NE(broken, nullptr);
  const std::string neighbour = Serve(*other);
  const std::string pod = Serve(*broken);
  Waker room({}, [&neighbour](const std::string&) {
    return Waker::Neighbours{.idle = {neighbour}, .busy = 0};
  });
  StartWaking(pod, 4, absl::Seconds(2), &room);
  const httplib::Result r = Hello();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_THAT(r->body, HasSubstr("POST /wake_up answered 500: the engine "
                                 "failed to wake"));
  EXPECT_THAT(r->body, HasSubstr("tries by the activation timeout"));
  EXPECT_GE(router_->DemandOf(kEp, absl::Now()).wakes_refused_total, 2);
  EXPECT_TRUE(Asleep(pod));
  EXPECT_TRUE(Asleep(neighbour));
  StopFront();  // before `room` goes
}

// A pod's own 503 (an engine without sleep mode: /is_sleeping is 404)
// goes to the client as it came, without a wake.
TEST_F(SleepingEngineTest, AnEnginesOwn503PassesThrough) {
  httplib::Server busy;
  busy.Post("/v1/completions",
            [](const httplib::Request&, httplib::Response& res) {
              res.status = 503;
              res.set_header("Retry-After", "7");
              res.set_content("{\"error\": {\"message\": \"overloaded\"}}",
                              "application/json");
            });
  busy.set_keep_alive_max_count(1);  // stop() waits for no kept connection
  const int port = busy.bind_to_any_port("127.0.0.1");
  std::thread t([&busy] { busy.listen_after_bind(); });
  StartWaking(absl::StrCat("127.0.0.1:", port));
  const httplib::Result r =
      Client().Post("/ml/llama/v1/completions", "{}", "application/json");
  busy.stop();
  t.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "7");
  EXPECT_THAT(r->body, HasSubstr("overloaded"));
  EXPECT_EQ(waker_.wakes(), 0);
  EXPECT_EQ(Wakes("woken") + Wakes("failed"), 0);
}

}  // namespace
}  // namespace pilotlight::activator
