#include "tests/tools/model_server/model_server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "controller/http/http_server.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/sleep.h"
#include "nlohmann/json.hpp"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace pilotlight::tools {

// The metric names of each server family, as vLLM, SGLang, TGI and Triton
// export them -- the names the operator's presets query
// (controller/prom/demand.cc). vLLM and SGLang observe every token's
// latency; TGI observes per request its mean time per token and its token
// counts as histograms, and has no TTFT histogram. Triton's core server
// has no per-token latency: its names here are the stand-in's own.
struct ModelServer::Metrics {
  prometheus::Gauge* running = nullptr;
  prometheus::Gauge* waiting = nullptr;
  prometheus::Gauge* kv_usage = nullptr;       // not in TGI
  prometheus::Histogram* ttft = nullptr;       // not in TGI
  prometheus::Histogram* itl = nullptr;        // per token
  prometheus::Histogram* mean_tpot = nullptr;  // per request (TGI)
  prometheus::Counter* prompt_tokens = nullptr;
  prometheus::Counter* generation_tokens = nullptr;
  prometheus::Histogram* input_length = nullptr;      // per request (TGI)
  prometheus::Histogram* generated_tokens = nullptr;  // per request (TGI)
  prometheus::Counter* success = nullptr;
  // SGLang's sglang:num_requests_total has no series until its first
  // request (prometheus_client makes a labelled child on first use).
  prometheus::Family<prometheus::Counter>* lazy_success = nullptr;
  prometheus::Labels success_labels;
  std::once_flag success_once;
  // SGLang's sglang:gen_throughput: tokens/s, as of the last whole second
  // with a token (SGLang sets it as it logs decode steps; idle, it stays).
  prometheus::Gauge* gen_throughput = nullptr;
  std::mutex throughput_mu;
  int64_t throughput_second = -1;
  int throughput_tokens = 0;

  Metrics(prometheus::Registry& r, MetricsFlavor flavor,
          const std::string& model) {
    const prometheus::Labels labels = {{"model_name", model}};
    const auto gauge = [&](const std::string& n, const char* help) {
      return &prometheus::BuildGauge().Name(n).Help(help).Register(r).Add(
          labels);
    };
    const auto counter = [&](const std::string& n, const char* help) {
      return &prometheus::BuildCounter().Name(n).Help(help).Register(r).Add(
          labels);
    };
    const auto histogram = [&](const std::string& n, const char* help,
                               const prometheus::Histogram::BucketBoundaries&
                                   b) {
      return &prometheus::BuildHistogram().Name(n).Help(help).Register(r).Add(
          labels, b);
    };
    const prometheus::Histogram::BucketBoundaries latency = {
        0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
        0.75,  1,     2.5,  5,    7.5,  10,   20,   40,  80};
    if (flavor == MetricsFlavor::kTgi) {
      running = gauge("tgi_batch_current_size", "Current batch size");
      waiting = gauge("tgi_queue_size", "Current queue size");
      mean_tpot = histogram("tgi_request_mean_time_per_token_duration",
                            "Mean time per token per request", latency);
      const prometheus::Histogram::BucketBoundaries tokens = {
          1, 8, 64, 256, 1024, 4096, 16384};
      input_length = histogram("tgi_request_input_length",
                               "Input tokens per request", tokens);
      generated_tokens = histogram("tgi_request_generated_tokens",
                                   "Generated tokens per request", tokens);
      success = counter("tgi_request_success", "Successful requests");
      return;
    }
    const auto name = [&](const char* vllm, const char* sglang,
                          const char* triton) {
      switch (flavor) {
        case MetricsFlavor::kSglang:
          return std::string(sglang);
        case MetricsFlavor::kTriton:
          return std::string(triton);
        case MetricsFlavor::kVllm:
        case MetricsFlavor::kTgi:
          break;
      }
      return std::string(vllm);
    };
    running = gauge(name("vllm:num_requests_running", "sglang:num_running_reqs",
                         "nv_inference_exec_count_running"),
                    "Requests running on the engine");
    waiting = gauge(name("vllm:num_requests_waiting", "sglang:num_queue_reqs",
                         "nv_inference_pending_request_count"),
                    "Requests waiting for a slot");
    kv_usage = gauge(name("vllm:kv_cache_usage_perc", "sglang:token_usage",
                          "nv_kv_cache_usage_perc"),
                     "KV-cache usage, 0 to 1");
    ttft = histogram(name("vllm:time_to_first_token_seconds",
                          "sglang:time_to_first_token_seconds",
                          "nv_time_to_first_token_seconds"),
                     "Time to first token", latency);
    itl = histogram(name("vllm:inter_token_latency_seconds",
                         "sglang:inter_token_latency_seconds",
                         "nv_inter_token_latency_seconds"),
                    "Time per output token", latency);
    prompt_tokens =
        counter(name("vllm:prompt_tokens_total", "sglang:prompt_tokens_total",
                     "nv_prompt_tokens_total"),
                "Prompt tokens processed");
    generation_tokens = counter(
        name("vllm:generation_tokens_total", "sglang:generation_tokens_total",
             "nv_generation_tokens_total"),
        "Tokens generated");
    if (flavor == MetricsFlavor::kSglang) {
      lazy_success = &prometheus::BuildCounter()
                          .Name("sglang:num_requests_total")
                          .Help("Number of requests processed")
                          .Register(r);
      success_labels = labels;
    } else {
      success = counter(
          name("vllm:request_success_total", "sglang:num_requests_total",
               "nv_inference_request_success"),
          "Requests finished");
    }
    if (flavor == MetricsFlavor::kSglang) {
      gen_throughput =
          gauge("sglang:gen_throughput", "Generation throughput, tokens/s");
    }
  }

  void KvUsage(double fraction) {
    if (kv_usage != nullptr) {
      kv_usage->Set(fraction);
    }
  }
  // The first token, `ttft_s` after the request arrived (model time).
  void FirstToken(double ttft_s, int prompt) {
    if (ttft != nullptr) {
      ttft->Observe(ttft_s);
    }
    if (prompt_tokens != nullptr) {
      prompt_tokens->Increment(prompt);
    }
    if (input_length != nullptr) {
      input_length->Observe(prompt);
    }
  }
  // `n` tokens generated, `tpot_s` apart.
  void Tokens(int n, double tpot_s) {
    if (itl != nullptr) {
      for (int i = 0; i < n; ++i) {
        itl->Observe(tpot_s);
      }
    }
    if (generation_tokens != nullptr) {
      generation_tokens->Increment(n);
    }
    if (gen_throughput != nullptr) {
      const int64_t second = absl::ToUnixSeconds(absl::Now());
      const std::lock_guard<std::mutex> lock(throughput_mu);
      if (second != throughput_second) {
        if (throughput_second >= 0) {
          gen_throughput->Set(second == throughput_second + 1
                                  ? throughput_tokens
                                  : 0);  // a silent second between
        }
        throughput_second = second;
        throughput_tokens = 0;
      }
      throughput_tokens += n;
    }
  }
  // The request done after `n` tokens at `tpot_s` each.
  void Finished(int n, double tpot_s) {
    if (lazy_success != nullptr) {
      std::call_once(success_once,
                     [&] { success = &lazy_success->Add(success_labels); });
    }
    success->Increment();
    if (mean_tpot != nullptr && n > 0) {
      mean_tpot->Observe(tpot_s);
    }
    if (generated_tokens != nullptr) {
      generated_tokens->Observe(n);
    }
  }
};

bool SharedGpu::Take(double gib, double host) {
  const std::lock_guard<std::mutex> lock(mu_);
  // A little slack for sums of shares (0.45 + 0.45 of a GPU fit in it).
  constexpr double kSlack = 1e-9;
  if (gpu_used_ + gib > gpu_gib_ + kSlack ||
      host_used_ + host > host_gib_ + kSlack) {
    return false;
  }
  gpu_used_ += gib;
  host_used_ += host;
  return true;
}

void SharedGpu::Release(double gib, double host) {
  const std::lock_guard<std::mutex> lock(mu_);
  gpu_used_ = std::max(0.0, gpu_used_ - gib);
  host_used_ = std::max(0.0, host_used_ - host);
}

double SharedGpu::gpu_free_gib() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return gpu_gib_ - gpu_used_;
}

double SharedGpu::host_free_gib() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return host_gib_ - host_used_;
}

std::string SharedGpu::Free() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return absl::StrFormat(
      "%.1f GiB of the GPU's %.1f free, %.1f of %.1f GiB of host memory",
      gpu_gib_ - gpu_used_, gpu_gib_, host_gib_ - host_used_, host_gib_);
}

ModelServer::ModelServer(const ModelServerOptions& options)
    : options_(options) {}

ModelServer::~ModelServer() {
  Stop();
  if (options_.gpu) {
    options_.gpu->Release(held_gpu_gib_, held_host_gib_);
  }
}

absl::StatusOr<std::unique_ptr<ModelServer>> ModelServer::Create(
    const ModelServerOptions& options) {
  absl::StatusOr<model::ModelProfile> profile =
      model::FindPreset(options.model);
  if (!profile.ok()) {
    return profile.status();
  }
  absl::StatusOr<model::Catalog> catalog = model::Catalog::Default();
  if (!catalog.ok()) {
    return catalog.status();
  }
  absl::StatusOr<const model::GpuClass*> gpu = catalog->Get(options.gpu_class);
  if (!gpu.ok()) {
    return gpu.status();
  }
  if (!(options.time_scale >= 0)) {
    return absl::InvalidArgumentError("time scale must be >= 0");
  }
  if (!(options.slowdown > 0 && options.slowdown <= 100)) {
    return absl::InvalidArgumentError("slowdown must be > 0 and <= 100");
  }
  if (options.workload.prompt_tokens < 1 ||
      options.workload.output_tokens < 1 ||
      options.workload.context_tokens < 1) {
    return absl::InvalidArgumentError(
        "prompt tokens, output tokens and context must be >= 1");
  }
  auto s = std::unique_ptr<ModelServer>(new ModelServer(options));
  if (s->options_.served_model_name.empty()) {
    s->options_.served_model_name = options.model;
  }
  model::EngineTuning tuning;
  tuning.decode_time_scale = options.slowdown;
  tuning.prefill_time_scale = options.slowdown;
  s->replica_ = std::make_unique<model::ReplicaModel>(
      *profile, **gpu, options.tensor_parallel, model::Precision::kBf16,
      model::Precision::kBf16, tuning);
  s->slots_ = options.max_num_seqs > 0
                  ? options.max_num_seqs
                  : std::max(1, s->replica_->MaxConcurrency(
                                    s->options_.workload, 0.08));
  s->kv_capacity_tokens_ = std::max(1.0, s->replica_->kv_capacity_tokens());
  const model::SleepAssumptions sleep_assumptions;
  s->wake_ =
      model::EstimateSleep(s->replica_->weight_bytes_per_gpu(),
                           options.tensor_parallel, **gpu, sleep_assumptions)
          .wake;
  s->offload_ = s->wake_ - sleep_assumptions.resume;
  if (absl::Status st = s->TakeSharedGpu(**gpu, sleep_assumptions); !st.ok()) {
    return st;
  }
  s->registry_ = std::make_shared<prometheus::Registry>();
  s->metrics_ = std::make_unique<Metrics>(*s->registry_, options.metrics,
                                          s->options_.served_model_name);
  s->server_ = std::make_unique<httplib::Server>();
  // A backlog and threads for a burst of new connections (the activator
  // forwards a held burst at once): see controller/http/http_server.h.
  s->socket_ = http::ConfigureHttpServer(*s->server_, {});
  s->Routes();
  return s;
}

// Asleep from the start if so asked; on a shared GPU, what it holds awake
// and asleep, and its place there as it starts.
absl::Status ModelServer::TakeSharedGpu(const model::GpuClass& gpu,
                                        const model::SleepAssumptions& a) {
  if (options_.start_asleep && !options_.enable_sleep_mode) {
    return absl::InvalidArgumentError(
        "an engine starts asleep only with sleep mode enabled");
  }
  if (options_.start_asleep) {
    sleep_ = Engine::kAsleep;
  }
  if (!options_.gpu) {
    return absl::OkStatus();
  }
  if (options_.tensor_parallel != 1) {
    return absl::InvalidArgumentError(
        "a shared GPU holds engines of one GPU each (tensor parallel 1)");
  }
  if (!(options_.gpu_memory_utilization > 0 &&
        options_.gpu_memory_utilization <= 1)) {
    return absl::InvalidArgumentError(
        "gpu memory utilization must be > 0 and <= 1");
  }
  awake_gpu_gib_ = options_.gpu_memory_utilization * gpu.memory_gib;
  asleep_gpu_gib_ = std::min(a.asleep_gpu_gib, awake_gpu_gib_);
  weights_gib_ = replica_->weight_bytes_per_gpu() / (1024.0 * 1024 * 1024);
  if (weights_gib_ > awake_gpu_gib_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s's weights (%.1f GiB) do not fit in %.2f of %s's %.1f GiB",
        options_.model, weights_gib_, options_.gpu_memory_utilization,
        options_.gpu_class, gpu.memory_gib));
  }
  const double gib = options_.start_asleep ? asleep_gpu_gib_ : awake_gpu_gib_;
  const double host = options_.start_asleep ? weights_gib_ : 0;
  if (!options_.gpu->Take(gib, host)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s needs %.1f GiB of the GPU and %.1f of host memory %s: %s",
        options_.served_model_name, gib, host,
        options_.start_asleep ? "asleep" : "awake", options_.gpu->Free()));
  }
  held_gpu_gib_ = gib;
  held_host_gib_ = host;
  return absl::OkStatus();
}

// From what it holds now to `gib` of the GPU and `host` of the node's
// memory; false (holding what it held) when there is no room.
bool ModelServer::MoveOnSharedGpu(double gib, double host) {
  if (!options_.gpu) {
    return true;
  }
  const double more_gpu = std::max(0.0, gib - held_gpu_gib_);
  const double more_host = std::max(0.0, host - held_host_gib_);
  if (!options_.gpu->Take(more_gpu, more_host)) {
    return false;
  }
  options_.gpu->Release(std::max(0.0, held_gpu_gib_ - gib),
                        std::max(0.0, held_host_gib_ - host));
  held_gpu_gib_ = gib;
  held_host_gib_ = host;
  return true;
}

absl::StatusOr<int> ModelServer::Bind() {
  return http::BindHttpServer(*server_, *socket_, options_.address,
                              options_.port, http::HttpServerOptions{}.backlog);
}

void ModelServer::Serve() { server_->listen_after_bind(); }

void ModelServer::Stop() {
  if (server_) {
    server_->stop();
  }
}

void ModelServer::Drain(absl::Duration quiet, absl::Duration most) {
  draining_ = true;
  const absl::Time deadline = absl::Now() + most;
  absl::Time idle_since = absl::Now();
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (absl::Now() < deadline) {
      if (running_ > 0 || waiting_ > 0) {
        idle_since = absl::Now();
      } else if (absl::Now() - idle_since >= quiet) {
        break;
      }
      slot_free_.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  Stop();
}

double ModelServer::TpotSeconds(int batch) const {
  return replica_->TpotSeconds(std::max(1, batch), options_.workload);
}

int ModelServer::Admit() {
  std::unique_lock<std::mutex> lock(mu_);
  if (sleep_ != Engine::kAwake) {
    return 0;
  }
  ++waiting_;
  metrics_->waiting->Set(waiting_);
  slot_free_.wait(lock, [this] { return running_ < slots_; });
  --waiting_;
  ++running_;
  metrics_->waiting->Set(waiting_);
  metrics_->running->Set(running_);
  return running_;
}

void ModelServer::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    metrics_->running->Set(running_);
  }
  slot_free_.notify_one();
  sleep_changed_.notify_all();  // a sleep waits for the last request
}

namespace {

void Sleep(double seconds) {
  if (seconds > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
}

int EstimateTokens(const std::string& text) {
  return std::max(1, static_cast<int>(text.size() / 4));
}

}  // namespace

void ModelServer::Routes() {
  server_->Get("/health",
               [this](const httplib::Request&, httplib::Response& res) {
                 if (draining_) {
                   res.status = 503;  // draining: route elsewhere
                 }
                 res.set_content("", "text/plain");
               });
  server_->Get(
      "/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        const nlohmann::json j = {{"object", "list"},
                                  {"data",
                                   {{{"id", options_.served_model_name},
                                     {"object", "model"},
                                     {"owned_by", "pilotlight-test"}}}}};
        res.set_content(j.dump(), "application/json");
      });
  server_->Get(
      "/metrics", [this](const httplib::Request&, httplib::Response& res) {
        std::ostringstream out;
        prometheus::TextSerializer().Serialize(out, registry_->Collect());
        res.set_content(out.str(), "text/plain; version=0.0.4");
      });
  const auto complete = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      const nlohmann::json body =
          nlohmann::json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.is_object()) {
        res.status = 400;
        res.set_content(
            R"({"error": {"message": "body is not a JSON object"}})",
            "application/json");
        return;
      }
      std::string prompt;
      if (chat) {
        for (const auto& m : body.value("messages", nlohmann::json::array())) {
          if (m.is_object()) {
            prompt += m.value("content", "");
          }
        }
      } else {
        prompt = body.value("prompt", "");
      }
      const int prompt_tokens = EstimateTokens(prompt);
      const int max_tokens =
          std::max(1, body.value("max_tokens", options_.default_max_tokens));
      const bool stream = body.value("stream", false);
      const std::string id =
          absl::StrCat(chat ? "chatcmpl-" : "cmpl-", next_id_.fetch_add(1));
      const auto start = std::chrono::steady_clock::now();
      const int batch = Admit();
      if (batch == 0) {
        res.status = 503;
        res.set_header("Retry-After", "1");
        res.set_content(
            R"({"error": {"message": "the engine is asleep: POST /wake_up first"}})",
            "application/json");
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        kv_tokens_ += prompt_tokens + max_tokens;
        metrics_->KvUsage(std::min(1.0, kv_tokens_ / kv_capacity_tokens_));
      }
      Sleep(options_.time_scale * replica_->TtftSeconds(prompt_tokens));
      const double ttft = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
      // In model time, as the inter-token histogram is.
      metrics_->FirstToken(options_.time_scale > 0
                               ? ttft / options_.time_scale
                               : replica_->TtftSeconds(prompt_tokens),
                           prompt_tokens);
      const double tpot = TpotSeconds(batch);
      const auto finish = [this, prompt_tokens, max_tokens, tpot](int tokens) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          kv_tokens_ -= prompt_tokens + max_tokens;
          metrics_->KvUsage(
              std::min(1.0, std::max(0.0, kv_tokens_) / kv_capacity_tokens_));
        }
        metrics_->Finished(tokens, tpot);
        Release();
      };
      const auto chunk = [this, id, chat](int i, bool last) {
        nlohmann::json c = {
            {"id", id},
            {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"model", options_.served_model_name}};
        nlohmann::json choice = {{"index", 0}};
        if (chat) {
          choice["delta"] = {{"content", absl::StrCat(" tok", i)}};
        } else {
          choice["text"] = absl::StrCat(" tok", i);
        }
        choice["finish_reason"] =
            last ? nlohmann::json("length") : nlohmann::json(nullptr);
        c["choices"] = nlohmann::json::array({choice});
        return c;
      };
      if (!stream) {
        Sleep(options_.time_scale * tpot * max_tokens);
        metrics_->Tokens(max_tokens, tpot);
        std::string text;
        for (int i = 0; i < max_tokens; ++i) {
          absl::StrAppend(&text, " tok", i);
        }
        nlohmann::json choice = {{"index", 0}, {"finish_reason", "length"}};
        if (chat) {
          choice["message"] = {{"role", "assistant"}, {"content", text}};
        } else {
          choice["text"] = text;
        }
        const nlohmann::json j = {
            {"id", id},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"model", options_.served_model_name},
            {"choices", nlohmann::json::array({choice})},
            {"usage",
             {{"prompt_tokens", prompt_tokens},
              {"completion_tokens", max_tokens},
              {"total_tokens", prompt_tokens + max_tokens}}}};
        finish(max_tokens);
        res.set_content(j.dump(), "application/json");
        return;
      }
      // Server-sent events: one chunk per token, then [DONE].
      auto sent = std::make_shared<int>(0);
      res.set_chunked_content_provider(
          "text/event-stream",
          [this, sent, max_tokens, tpot, chunk](size_t,
                                                httplib::DataSink& sink) {
            if (*sent < max_tokens) {
              Sleep(options_.time_scale * tpot);
              metrics_->Tokens(1, tpot);
              const std::string ev = absl::StrCat(
                  "data: ", chunk(*sent, *sent + 1 == max_tokens).dump(),
                  "\n\n");
              ++*sent;
              return sink.write(ev.data(), ev.size());
            }
            static constexpr char kDone[] = "data: [DONE]\n\n";
            sink.write(kDone, sizeof(kDone) - 1);
            sink.done();
            return true;
          },
          [finish, sent](bool) { finish(*sent); });
    };
  };
  server_->Post("/v1/completions", complete(false));
  server_->Post("/v1/chat/completions", complete(true));
  if (options_.enable_sleep_mode) {
    SleepRoutes();
  }
}

void ModelServer::SleepRoutes() {
  const auto answer = [](httplib::Response& res, int status,
                         const std::string& message) {
    res.status = status;
    res.set_content(nlohmann::json({{"error", {{"message", message}}}}).dump(),
                    "application/json");
  };
  server_->Post("/sleep", [this, answer](const httplib::Request& req,
                                         httplib::Response& res) {
    const std::string level =
        req.has_param("level") ? req.get_param_value("level") : "1";
    if (level != "1") {
      answer(res, 400,
             absl::StrCat("sleep level ", level,
                          " is not modelled here (level 1: weights kept in "
                          "host memory)"));
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (sleep_ == Engine::kAsleep) {
      return;  // 200: already asleep
    }
    if (sleep_ != Engine::kAwake) {
      answer(res, 409, "a sleep or a wake is under way");
      return;
    }
    // The weights need room in the node's memory before they move.
    if (!MoveOnSharedGpu(awake_gpu_gib_, weights_gib_)) {
      answer(res, 507,
             absl::StrFormat("no room for the weights (%.1f GiB) in host "
                             "memory: %s",
                             weights_gib_, options_.gpu->Free()));
      return;
    }
    // No new request from here; the ones it has finish first.
    sleep_ = Engine::kFallingAsleep;
    sleep_changed_.wait(lock,
                        [this] { return running_ == 0 && waiting_ == 0; });
    lock.unlock();
    Sleep(options_.time_scale * absl::ToDoubleSeconds(offload_));
    lock.lock();
    MoveOnSharedGpu(asleep_gpu_gib_, weights_gib_);  // frees the GPU
    sleep_ = Engine::kAsleep;
    sleep_changed_.notify_all();
  });
  server_->Post("/wake_up", [this, answer](const httplib::Request&,
                                           httplib::Response& res) {
    std::unique_lock<std::mutex> lock(mu_);
    if (sleep_ == Engine::kFallingAsleep) {
      answer(res, 409, "a sleep is under way");
      return;
    }
    if (sleep_ == Engine::kAsleep && options_.wake_fails) {
      answer(res, 500, "the engine failed to wake: its weights did not load");
      return;
    }
    if (sleep_ == Engine::kAsleep) {
      // Another engine awake on the GPU leaves no room: refused, asleep.
      if (!MoveOnSharedGpu(awake_gpu_gib_, weights_gib_)) {
        answer(res, 507,
               absl::StrFormat("GPU memory taken: waking needs %.1f GiB of "
                               "the GPU, %s",
                               awake_gpu_gib_, options_.gpu->Free()));
        return;
      }
      sleep_ = Engine::kWaking;
      lock.unlock();
      Sleep(options_.time_scale * absl::ToDoubleSeconds(wake_));
      lock.lock();
      MoveOnSharedGpu(awake_gpu_gib_, 0);  // the weights left host memory
      sleep_ = Engine::kAwake;
      sleep_changed_.notify_all();
      return;
    }
    // Awake, or another call is waking it: answered once it serves.
    sleep_changed_.wait(lock, [this] { return sleep_ == Engine::kAwake; });
  });
  server_->Get("/is_sleeping", [this](const httplib::Request&,
                                      httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool asleep = sleep_ == Engine::kAsleep || sleep_ == Engine::kWaking;
    res.set_content(nlohmann::json({{"is_sleeping", asleep}}).dump(),
                    "application/json");
  });
}

}  // namespace pilotlight::tools
