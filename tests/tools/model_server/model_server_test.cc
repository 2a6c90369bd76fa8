// The model-server stand-in over real HTTP on a free loopback port.
#include "tests/tools/model_server/model_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/sizing.h"
#include "controller/model/sleep.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/sim/one_variant_config.h"

namespace pilotlight::tools {
namespace {

using ::testing::HasSubstr;

class ModelServerTest : public ::testing::Test {
 protected:
  void Start(MetricsFlavor flavor = MetricsFlavor::kVllm, int seqs = 0,
             double time_scale = 0.01, bool sleep_mode = false) {
    ModelServerOptions o;
    o.time_scale = time_scale;  // latencies from the sizing model, scaled
    o.metrics = flavor;
    o.max_num_seqs = seqs;
    o.enable_sleep_mode = sleep_mode;
    server_ = *ModelServer::Create(o);
    port_ = *server_->Bind();
    thread_ = std::thread([this] { server_->Serve(); });
  }
  void TearDown() override {
    if (server_) {
      server_->Stop();
    }
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(10, 0);
    return c;
  }
  // One completion of 6 tokens on a 5-token prompt; false if it failed.
  bool CompleteSixTokens() {
    auto r =
        Client().Post("/v1/completions",
                      R"({"prompt": "count to five please", "max_tokens": 6})",
                      "application/json");
    return r && r->status == 200;
  }
  std::string Metrics() {
    auto r = Client().Get("/metrics");
    return r ? r->body : "";
  }

  std::unique_ptr<ModelServer> server_;
  int port_ = 0;
  std::thread thread_;
};

// Health, the model list, and a completion with its usage.
TEST_F(ModelServerTest, OpenAiCompletion) {
  Start();
  httplib::Client c = Client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["id"],
            "llama-3.1-8b");
  auto r = c.Post("/v1/completions",
                  R"({"model": "llama-3.1-8b", "prompt": "count to five please",
                      "max_tokens": 5})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);  // 20 characters / 4
  EXPECT_THAT(j["choices"][0]["text"].get<std::string>(), HasSubstr("tok4"));
}

// stream: true answers with one server-sent event per token, then [DONE].
TEST_F(ModelServerTest, ChatStreamsServerSentEvents) {
  Start();
  auto r = Client().Post(
      "/v1/chat/completions",
      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
          "stream": true})",
      "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_THAT(r->get_header_value("Content-Type"),
              HasSubstr("text/event-stream"));
  int events = 0;
  for (size_t at = r->body.find("data: {"); at != std::string::npos;
       at = r->body.find("data: {", at + 1)) {
    ++events;
  }
  EXPECT_EQ(events, 4);
  EXPECT_THAT(r->body, HasSubstr("data: [DONE]"));
  EXPECT_THAT(r->body, HasSubstr("chat.completion.chunk"));
}

// The vLLM metric names, counting what was served; concurrent requests
// beyond the slots wait (seen in the waiting gauge) and all finish. (Kept
// to 8 connections: Debian's cpp-httplib listens with a backlog of 5.
// 30 tokens a request: long enough for the waiting to be seen on a loaded
// machine.)
TEST_F(ModelServerTest, VllmMetricsCountTheWork) {
  Start(MetricsFlavor::kVllm, /*seqs=*/2, /*time_scale=*/2.0);
  ASSERT_EQ(server_->slots(), 2);
  const int n = 8;
  std::atomic<bool> done{false};
  double max_waiting = 0;
  std::thread watcher([&] {
    while (!done) {
      const std::string m = Metrics();
      const std::string key =
          "vllm:num_requests_waiting{model_name=\"llama-3.1-8b\"} ";
      const size_t at = m.find(key);
      if (at != std::string::npos) {
        max_waiting =
            std::max(max_waiting, std::stod(m.substr(at + key.size())));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::vector<std::thread> clients;
  for (int i = 0; i < n; ++i) {
    clients.emplace_back([this] {
      auto r = Client().Post("/v1/completions",
                             R"({"prompt": "abcd", "max_tokens": 30})",
                             "application/json");
      ASSERT_TRUE(r) << httplib::to_string(r.error());
      EXPECT_EQ(r->status, 200) << r->body;
    });
  }
  for (std::thread& t : clients) {
    t.join();
  }
  done = true;
  watcher.join();
  EXPECT_GE(max_waiting, 1) << "requests beyond the 2 slots should wait";
  const std::string m = Metrics();
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_count", "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total", "vllm:request_success_total"}) {
    EXPECT_THAT(m, HasSubstr(name));
  }
  EXPECT_THAT(
      m, HasSubstr(absl::StrCat(
             "vllm:request_success_total{model_name=\"llama-3.1-8b\"} ", n)));
  EXPECT_THAT(m,
              HasSubstr(absl::StrCat(
                  "vllm:generation_tokens_total{model_name=\"llama-3.1-8b\"} ",
                  3 * n)));
  EXPECT_THAT(
      m, HasSubstr("vllm:num_requests_running{model_name=\"llama-3.1-8b\"} 0"));
}

// Bad bodies get a 400 with a message; the TGI flavour renames the metrics.
// Its TPOT is the simulator's for the same traffic shape: code completion
// (2,048-token prompts, 28-token answers) spreads far more prefill over each
// output token than the default shape, and both sides say so equally.
TEST(ModelServerServiceTest, TpotIsTheSimulatorsForTheSameShape) {
  ModelServerOptions o;
  o.max_num_seqs = 8;
  o.workload.prompt_tokens = 2048;
  o.workload.output_tokens = 28;
  const std::unique_ptr<ModelServer> code = *ModelServer::Create(o);
  const std::unique_ptr<ModelServer> plain =
      *ModelServer::Create(ModelServerOptions{});

  const model::Catalog catalog = *model::Catalog::Default();
  sim::SimConfig c = sim::OneVariantConfig(catalog);
  c.spec.concurrency_per_replica = 8;
  c.spec.workload.prompt_tokens = 2048;
  c.spec.workload.output_tokens = 28;
  const std::vector<sim::ServiceModel> m = *sim::BuildServiceModels(c, false);
  ASSERT_EQ(m.size(), 1u);
  for (size_t b : {1u, 4u, 8u}) {
    EXPECT_DOUBLE_EQ(code->TpotSeconds(static_cast<int>(b)), m[0].tpot_s[b])
        << "batch " << b;
  }
  EXPECT_GT(code->TpotSeconds(8), 2 * plain->TpotSeconds(8));
  o.workload.output_tokens = 0;
  EXPECT_FALSE(ModelServer::Create(o).ok());
}

// A value of the exposition text `m`: the line starting with `series`
// followed by a space; -1 when there is none.
double Value(const std::string& m, const std::string& series) {
  const std::string key = series + " ";
  for (size_t at = m.find(key); at != std::string::npos;
       at = m.find(key, at + 1)) {
    if (at == 0 || m[at - 1] == '\n') {
      return std::stod(m.substr(at + key.size()));
    }
  }
  return -1;
}

// TGI's names and shapes: each request's mean time per token and its token
// counts as histograms (observed once a request), no TTFT histogram, no
// vLLM name.
TEST_F(ModelServerTest, BadBodyAndTgiNames) {
  Start(MetricsFlavor::kTgi);
  auto bad = Client().Post("/v1/completions", "not json", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_THAT(bad->body, HasSubstr("not a JSON object"));
  ASSERT_TRUE(CompleteSixTokens());
  const std::string m = Metrics();
  const std::string l = "{model_name=\"llama-3.1-8b\"}";
  EXPECT_THAT(m, HasSubstr("tgi_queue_size"));
  EXPECT_EQ(Value(m, "tgi_request_mean_time_per_token_duration_count" + l), 1)
      << m;
  EXPECT_GT(Value(m, "tgi_request_mean_time_per_token_duration_sum" + l), 0);
  EXPECT_EQ(Value(m, "tgi_request_generated_tokens_sum" + l), 6);
  EXPECT_EQ(Value(m, "tgi_request_input_length_sum" + l), 5);
  EXPECT_EQ(Value(m, "tgi_request_success" + l), 1);
  EXPECT_THAT(m, ::testing::Not(HasSubstr("time_to_first_token")));
  EXPECT_THAT(m, ::testing::Not(HasSubstr("vllm:")));
}

// SGLang's names: a latency observation per token, TTFT and prompt tokens
// per request, its generation throughput gauge.
TEST_F(ModelServerTest, SglangNames) {
  Start(MetricsFlavor::kSglang);
  // As SGLang's: the request counter has no series before its first
  // request; the gauges do.
  EXPECT_THAT(Metrics(),
              ::testing::Not(HasSubstr("sglang:num_requests_total{")));
  EXPECT_THAT(Metrics(), HasSubstr("sglang:num_running_reqs{"));
  ASSERT_TRUE(CompleteSixTokens());
  ASSERT_TRUE(CompleteSixTokens());
  const std::string m = Metrics();
  const std::string l = "{model_name=\"llama-3.1-8b\"}";
  EXPECT_EQ(Value(m, "sglang:inter_token_latency_seconds_count" + l), 12) << m;
  EXPECT_EQ(Value(m, "sglang:time_to_first_token_seconds_count" + l), 2);
  EXPECT_EQ(Value(m, "sglang:prompt_tokens_total" + l), 10);
  EXPECT_EQ(Value(m, "sglang:generation_tokens_total" + l), 12);
  EXPECT_EQ(Value(m, "sglang:num_requests_total" + l), 2);
  EXPECT_GE(Value(m, "sglang:gen_throughput" + l), 0);
  EXPECT_THAT(m, HasSubstr("sglang:num_running_reqs"));
  EXPECT_THAT(m, ::testing::Not(HasSubstr("vllm:")));
}

// Without sleep mode the three paths are absent, as on an engine that has
// none (vLLM without VLLM_SERVER_DEV_MODE).
TEST_F(ModelServerTest, SleepPathsAreAbsentUnlessEnabled) {
  Start();
  httplib::Client c = Client();
  auto sleep = c.Post("/sleep?level=1", "", "text/plain");
  ASSERT_TRUE(sleep);
  EXPECT_EQ(sleep->status, 404);
  auto asked = c.Get("/is_sleeping");
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->status, 404);
  EXPECT_TRUE(CompleteSixTokens());
}

// Asleep it serves nothing (503, Retry-After); a wake takes the sleep
// model's time for these weights over this class's host link, then it
// serves again. Level 2 is refused.
TEST_F(ModelServerTest, AsleepServesNothingAndWakesInTheSleepModelsTime) {
  constexpr double kScale = 0.2;
  Start(MetricsFlavor::kVllm, 0, kScale, /*sleep_mode=*/true);
  // The same arithmetic the policy and the simulator use.
  const model::ReplicaModel replica(
      *model::FindPreset("llama-3.1-8b"),
      **model::Catalog::Default()->Get("a100-80gb"), 1, model::Precision::kBf16,
      model::Precision::kBf16, {});
  const absl::Duration wake =
      model::EstimateSleep(replica.weight_bytes_per_gpu(), 1,
                           **model::Catalog::Default()->Get("a100-80gb"), {})
          .wake;
  EXPECT_EQ(server_->wake_time(), wake);
  EXPECT_GT(wake, absl::Milliseconds(500));  // the copy, then the resume
  httplib::Client c = Client();
  const auto is_sleeping = [&c] {
    auto r = c.Get("/is_sleeping");
    return r && r->status == 200
               ? nlohmann::json::parse(r->body).value("is_sleeping", false)
               : false;
  };
  EXPECT_FALSE(is_sleeping());
  auto r = c.Post("/sleep?level=2", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_FALSE(is_sleeping());
  r = c.Post("/sleep?level=1", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(is_sleeping());
  r = c.Post("/v1/completions", R"({"prompt": "hello", "max_tokens": 2})",
             "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_THAT(r->body, HasSubstr("asleep"));
  const absl::Time start = absl::Now();
  r = c.Post("/wake_up", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_GE(absl::Now() - start, wake * kScale);
  EXPECT_FALSE(is_sleeping());
  EXPECT_TRUE(CompleteSixTokens());
}

// A sleep lets the requests the engine has finish first (200 tokens: about
// 0.4 s here); two wakes at once are both answered once it serves.
TEST_F(ModelServerTest, SleepLetsRequestsFinishAndWakesShareOne) {
  constexpr double kScale = 0.2;
  Start(MetricsFlavor::kVllm, 0, kScale, /*sleep_mode=*/true);
  std::atomic<bool> answered{false};
  std::thread request([this, &answered] {
    auto r = Client().Post("/v1/completions",
                           R"({"prompt": "a long answer", "max_tokens": 200})",
                           "application/json");
    answered = r && r->status == 200;
  });
  // Once it runs (the gauge the operator reads says so).
  for (int i = 0;
       i < 200 && !absl::StrContains(Metrics(),
                                     "vllm:num_requests_running{"
                                     "model_name=\"llama-3.1-8b\"} 1");
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto r = Client().Post("/sleep", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(answered) << "the sleep returned before the request finished";
  request.join();
  std::atomic<int> woken{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> wakes;
  for (int i = 0; i < 2; ++i) {
    wakes.emplace_back([this, &woken] {
      auto w = Client().Post("/wake_up", "", "text/plain");
      woken += w && w->status == 200 ? 1 : 0;
    });
  }
  for (std::thread& t : wakes) {
    t.join();
  }
  EXPECT_EQ(woken, 2);
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, server_->wake_time() * kScale);
  EXPECT_TRUE(CompleteSixTokens());
}

// A pool pod: engines on one GPU, each taking 0.9 of it awake, and host
// memory for two engines' weights asleep. One is awake at a time: a wake
// the GPU has no room for is refused (507, what is free), and so is a
// sleep the host memory has no room for; each engine stays as it was.
TEST(ModelServerPoolTest, EnginesOnOneGpuWakeOneAtATime) {
  const model::ReplicaModel replica(
      *model::FindPreset("llama-3.1-8b"),
      **model::Catalog::Default()->Get("a100-80gb"), 1, model::Precision::kBf16,
      model::Precision::kBf16, {});
  const double weights =
      replica.weight_bytes_per_gpu() / (1024.0 * 1024 * 1024);
  auto gpu = std::make_shared<SharedGpu>(80, 2.5 * weights);
  const auto engine = [&](const std::string& name, bool asleep) {
    ModelServerOptions o;
    o.time_scale = 0.01;
    o.enable_sleep_mode = true;
    o.served_model_name = name;
    o.gpu = gpu;
    o.start_asleep = asleep;
    return ModelServer::Create(o);
  };
  absl::StatusOr<std::unique_ptr<ModelServer>> a = engine("a", false);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_DOUBLE_EQ((*a)->awake_gpu_gib(), 72);
  EXPECT_NEAR((*a)->weights_gib(), weights, 1e-9);
  // A second engine awake does not fit beside it; asleep it does.
  absl::StatusOr<std::unique_ptr<ModelServer>> b = engine("b", false);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(std::string(b.status().message()),
              HasSubstr("b needs 72.0 GiB of the GPU and 0.0 of host memory "
                        "awake: 8.0 GiB of the GPU's 80.0 free"));
  b = engine("b", true);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NEAR(gpu->gpu_free_gib(), 8 - (*b)->asleep_gpu_gib(), 1e-9);
  std::vector<std::thread> threads;
  std::vector<httplib::Client> clients;
  for (ModelServer* s : {a->get(), b->get()}) {
    const int port = *s->Bind();
    threads.emplace_back([s] { s->Serve(); });
    clients.emplace_back("127.0.0.1", port);
    clients.back().set_read_timeout(10, 0);
  }
  httplib::Client& ca = clients[0];
  httplib::Client& cb = clients[1];
  const auto is_sleeping = [](httplib::Client& c) {
    auto r = c.Get("/is_sleeping");
    return r && r->status == 200 &&
           nlohmann::json::parse(r->body).value("is_sleeping", false);
  };
  EXPECT_FALSE(is_sleeping(ca));
  EXPECT_TRUE(is_sleeping(cb));
  // b cannot wake while a holds the GPU.
  auto r = cb.Post("/wake_up", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 507);
  EXPECT_THAT(r->body, HasSubstr("GPU memory taken: waking needs 72.0 GiB"));
  EXPECT_TRUE(is_sleeping(cb));
  // a asleep: b wakes and serves.
  r = ca.Post("/sleep?level=1", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = cb.Post("/wake_up", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_FALSE(is_sleeping(cb));
  r = cb.Post("/v1/completions", R"({"prompt": "hello", "max_tokens": 2})",
              "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Now a cannot wake; and with a third engine asleep beside a, b cannot
  // sleep: their weights fill host memory.
  r = ca.Post("/wake_up", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 507);
  absl::StatusOr<std::unique_ptr<ModelServer>> c = engine("c", true);
  ASSERT_TRUE(c.ok()) << c.status();
  r = cb.Post("/sleep?level=1", "", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 507);
  EXPECT_THAT(r->body, HasSubstr("no room for the weights"));
  EXPECT_FALSE(is_sleeping(cb));
  for (ModelServer* s : {a->get(), b->get()}) {
    s->Stop();
  }
  for (std::thread& t : threads) {
    t.join();
  }
  // Gone, they hold nothing.
  a->reset();
  b->reset();
  c->reset();
  EXPECT_NEAR(gpu->gpu_free_gib(), 80, 1e-9);
  EXPECT_NEAR(gpu->host_free_gib(), 2.5 * weights, 1e-9);
}

}  // namespace
}  // namespace pilotlight::tools
