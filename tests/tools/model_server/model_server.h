// ModelServer: a stand-in for a GPU model server (vLLM-like) for the local
// test cluster -- real HTTP, with latencies and batching from Pilotlight's
// sizing model instead of a GPU. It speaks the OpenAI API the activator and
// load generators use and exports the metric names the operator reads:
//
//   GET  /health                200 once started
//   GET  /v1/models             {"object": "list", "data": [{"id": ...}]}
//   POST /v1/completions        OpenAI completions, "stream": true as SSE
//   POST /v1/chat/completions   OpenAI chat completions, likewise
//   GET  /metrics               Prometheus text: vllm:* (default), or the
//                               TGI (tgi_*) or Triton (nv_inference_*) names
//
// With enable_sleep_mode, vLLM's sleep mode as vLLM serves it (with
// VLLM_SERVER_DEV_MODE=1); without, the three paths are absent (404), as on
// an engine that has none:
//
//   POST /sleep?level=1         lets the requests it has finish, moves the
//                               weights to host memory (the copy time), 200
//   POST /wake_up               copies them back: the sleep model's wake
//                               time (model::EstimateSleep: the weights over
//                               the GPU class's host link, plus the resume);
//                               a second call waits for the same wake
//   GET  /is_sleeping           {"is_sleeping": true|false}
//
// An engine asleep, falling asleep or waking serves nothing: a completion
// is answered 503 with Retry-After (whoever woke it sends again). Level 2
// (weights discarded) is not modelled: 400. A sleep while a wake is under
// way, or a wake while a sleep is, answers 409.
//
// Engines that share a GPU (a pool pod: one engine per model, as vLLM's
// sleep-mode docs run them; options.gpu, one SharedGpu for all of them)
// account for its memory as vLLM's engines take it: an awake engine holds
// its gpu_memory_utilization of the GPU, one asleep its weights in the
// node's memory and a CUDA context on the GPU. A wake the GPU has no room
// for, or a sleep the host memory has no room for, is refused with 507 and
// what is free, and the engine stays as it was (a real engine would fail
// its allocation); so does Create for an engine that does not fit awake,
// unless it starts asleep (what a pool leaves an engine it started and put
// to sleep). An engine made with `wake_fails` answers every wake 500, as
// vLLM answers one that fails (its weights no longer load, say), and stays
// asleep: a broken engine, for the activator's and controller's fallbacks.
//
// Serving model: at most `slots` requests run at once (the sizing model's
// concurrency at the TPOT SLO); the rest wait in FIFO order. A running
// request takes the model's prefill time for its prompt, then one TPOT per
// output token at the current batch size. Prompt tokens are estimated as
// characters / 4. All sleeps are multiplied by `time_scale` so tests run
// fast; the latency histograms it exports stay in model time (unscaled).
// Thread-safety: the server's methods may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/model/gpu_class.h"
#include "controller/model/sizing.h"
#include "controller/model/sleep.h"

namespace httplib {
class Server;
}
namespace pilotlight::http {
struct ListenSocket;
}
namespace prometheus {
class Registry;
}

namespace pilotlight::tools {

enum class MetricsFlavor { kVllm, kSglang, kTgi, kTriton };

// One GPU's memory and the node's memory kept for its engines asleep,
// shared by the engines on it. Thread-safe.
class SharedGpu {
 public:
  SharedGpu(double gpu_gib, double host_gib)
      : gpu_gib_(gpu_gib), host_gib_(host_gib) {}
  // Takes `gib` of the GPU and `host` of the node's memory, both or
  // neither; false when either has less free.
  bool Take(double gib, double host);
  void Release(double gib, double host);
  // "12.3 GiB of the GPU's 80.0 free, 40.0 of 400.0 GiB of host memory"
  std::string Free() const;
  double gpu_free_gib() const;
  double host_free_gib() const;

 private:
  const double gpu_gib_;
  const double host_gib_;
  mutable std::mutex mu_;
  double gpu_used_ = 0;
  double host_used_ = 0;
};

struct ModelServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0: any free port
  std::string model = "llama-3.1-8b";
  std::string gpu_class = "a100-80gb";
  int tensor_parallel = 1;
  std::string served_model_name;  // default: `model`
  MetricsFlavor metrics = MetricsFlavor::kVllm;
  double time_scale = 1.0;
  // This server's steps take `slowdown` times what the sizing model says
  // (a GPU slower, or faster when < 1, than the catalog assumes): the
  // sizing model's own calibration scales, so its capacity, its latencies
  // and the histograms it exports all follow.
  double slowdown = 1.0;
  // Most requests running at once (vLLM's max_num_seqs); 0: the sizing
  // model's concurrency at an 80 ms TPOT.
  int max_num_seqs = 0;
  int default_max_tokens = 16;
  // vLLM's sleep mode: POST /sleep, POST /wake_up, GET /is_sleeping.
  bool enable_sleep_mode = false;
  // The GPU it shares with other engines (nullptr: one of its own, no
  // accounting), the share of it the engine takes awake, and whether it
  // starts asleep (with enable_sleep_mode; one GPU: tensor_parallel 1).
  std::shared_ptr<SharedGpu> gpu;
  double gpu_memory_utilization = 0.9;
  bool start_asleep = false;
  bool wake_fails = false;  // every POST /wake_up answers 500, asleep
  // The traffic this server is sized for: its TPOT at a batch carries the
  // prefill of that typical prompt spread over the typical output (a
  // vLLM-like engine runs other requests' prefills between decode steps),
  // exactly as the simulator's service model does for the same shape.
  model::Workload workload;
};

class ModelServer {
 public:
  // Builds the service model from the sizing model; errors name the model
  // or class.
  static absl::StatusOr<std::unique_ptr<ModelServer>> Create(
      const ModelServerOptions& options);
  ~ModelServer();

  // Binds (to a free port when options.port == 0); returns the port.
  absl::StatusOr<int> Bind();
  // Serves until Stop(); call after Bind(), typically on its own thread.
  void Serve();
  void Stop();
  // SIGTERM, as vLLM's server drains: the health path answers 503 (the
  // activator stops routing here within a probe period), the requests in
  // flight -- streams too, which httplib's stop() alone would cut off --
  // finish, and once none has run for `quiet` (or after `most`) it stops.
  void Drain(absl::Duration quiet = absl::Milliseconds(500),
             absl::Duration most = absl::Seconds(30));

  int slots() const { return slots_; }
  // What a wake takes (before time_scale): the sleep model's.
  absl::Duration wake_time() const { return wake_; }
  // On a SharedGpu: what it holds awake (GiB of the GPU), and asleep (GiB
  // of the GPU, and of the node's memory for its weights).
  double awake_gpu_gib() const { return awake_gpu_gib_; }
  double asleep_gpu_gib() const { return asleep_gpu_gib_; }
  double weights_gib() const { return weights_gib_; }
  // Seconds per output token with `batch` running (the sizing model's, at
  // the configured workload and slowdown; before time_scale).
  double TpotSeconds(int batch) const;

 private:
  struct Metrics;
  explicit ModelServer(const ModelServerOptions& options);
  void Routes();
  enum class Engine { kAwake, kFallingAsleep, kAsleep, kWaking };
  // Waits for a slot; returns the batch size once running, or 0 when the
  // engine is not awake (the request is refused).
  int Admit();
  void SleepRoutes();
  void Release();
  absl::Status TakeSharedGpu(const model::GpuClass& gpu,
                             const model::SleepAssumptions& a);
  bool MoveOnSharedGpu(double gib, double host);

  ModelServerOptions options_;
  std::unique_ptr<model::ReplicaModel> replica_;
  int slots_ = 1;
  double kv_capacity_tokens_ = 1;
  std::unique_ptr<httplib::Server> server_;
  std::shared_ptr<http::ListenSocket> socket_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Metrics> metrics_;

  std::mutex mu_;
  std::condition_variable slot_free_;
  int running_ = 0;
  int waiting_ = 0;
  Engine sleep_ = Engine::kAwake;
  std::condition_variable sleep_changed_;
  absl::Duration wake_;     // asleep -> serving
  absl::Duration offload_;  // serving -> asleep (the copy alone)
  double awake_gpu_gib_ = 0;
  double asleep_gpu_gib_ = 0;
  double weights_gib_ = 0;
  // What it holds of options_.gpu now (released when it goes).
  double held_gpu_gib_ = 0;
  double held_host_gib_ = 0;
  std::atomic<bool> draining_{false};
  double kv_tokens_ = 0;
  std::atomic<int64_t> next_id_{0};
};

}  // namespace pilotlight::tools
