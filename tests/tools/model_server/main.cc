// pilotlight-model-server: a model-server stand-in for the local test
// cluster (model_server.h). Prints "listening on ADDRESS:PORT" once bound,
// a line per engine: with --models, one engine per served model name, on
// consecutive ports, all on one GPU (a pool pod): those that fit start
// awake, in order, and the rest asleep.
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/cmd/flags.h"
#include "controller/model/catalog.h"
#include "controller/model/sleep.h"
#include "tests/tools/model_server/model_server.h"

namespace {

// The engines to run: the one `o` describes, or with --models one per
// name on one shared GPU, awake while they fit.
absl::StatusOr<std::vector<pilotlight::tools::ModelServerOptions>> Engines(
    const pilotlight::tools::ModelServerOptions& o,
    const pilotlight::cmd::ParsedFlags& flags) {
  const std::optional<std::string> models = flags.String("models");
  if (!models) {
    if (flags.String("wake-fails")) {
      return absl::InvalidArgumentError("--wake-fails needs --models");
    }
    return std::vector<pilotlight::tools::ModelServerOptions>{o};
  }
  const std::vector<std::string> names =
      absl::StrSplit(*models, ',', absl::SkipEmpty());
  if (names.empty()) {
    return absl::InvalidArgumentError("--models: no name");
  }
  const std::vector<std::string> broken = absl::StrSplit(
      flags.String("wake-fails").value_or(""), ',', absl::SkipEmpty());
  for (const std::string& b : broken) {
    if (!absl::c_linear_search(names, b)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--wake-fails: ", b, " is not one of --models"));
    }
  }
  if (!o.enable_sleep_mode && names.size() > 1) {
    return absl::InvalidArgumentError(
        "--models: engines sharing a GPU need --enable-sleep-mode");
  }
  absl::StatusOr<pilotlight::model::Catalog> catalog =
      pilotlight::model::Catalog::Default();
  if (!catalog.ok()) {
    return catalog.status();
  }
  absl::StatusOr<const pilotlight::model::GpuClass*> gpu =
      catalog->Get(o.gpu_class);
  if (!gpu.ok()) {
    return gpu.status();
  }
  const pilotlight::model::SleepAssumptions sleep;
  double host =
      (*gpu)->host_memory_gib_per_gpu * (1 - sleep.host_reserved_share);
  double utilization = 0.9;
  for (const auto& [name, target] :
       {std::pair<const char*, double*>{"host-memory-gib", &host},
        {"gpu-memory-utilization", &utilization}}) {
    absl::StatusOr<std::optional<double>> v = flags.Double(name);
    if (!v.ok()) {
      return v.status();
    }
    if (*v) {
      *target = **v;
    }
  }
  auto shared =
      std::make_shared<pilotlight::tools::SharedGpu>((*gpu)->memory_gib, host);
  std::vector<pilotlight::tools::ModelServerOptions> out;
  double awake = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    pilotlight::tools::ModelServerOptions e = o;
    e.served_model_name = names[i];
    e.port = o.port == 0 ? 0 : o.port + static_cast<int>(i);
    e.gpu = shared;
    e.gpu_memory_utilization = utilization;
    awake += utilization;
    e.start_asleep = awake > 1 + 1e-9;
    e.wake_fails = absl::c_linear_search(broken, names[i]);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using pilotlight::cmd::FlagSpec;
  const std::vector<FlagSpec> specs = {
      {"address", false, "IP", "address to listen on (default 127.0.0.1)"},
      {"port", false, "N", "port (default 0: any free port)"},
      {"model", false, "NAME", "model preset (default llama-3.1-8b)"},
      {"gpu", false, "CLASS", "GPU class (default a100-80gb)"},
      {"tensor-parallel", false, "N", "GPUs per replica (default 1)"},
      {"served-model-name", false, "NAME", "name in /v1/models"},
      {"metrics", false, "F",
       "vllm, sglang, tgi or triton metric names (default vllm)"},
      {"time-scale", false, "F", "multiply every latency (default 1)"},
      {"slowdown", false, "F",
       "run F times slower than the sizing model (default 1)"},
      {"max-num-seqs", false, "N",
       "most requests running at once (default: the sizing model's)"},
      {"prompt-tokens", false, "N",
       "typical prompt of the traffic, for prefill interference (1024)"},
      {"output-tokens", false, "N", "typical output of the traffic (256)"},
      {"context", false, "N", "KV room per sequence, tokens (8192)"},
      {"drain-timeout", false, "DURATION",
       "on SIGTERM, the longest it lets running requests finish (default "
       "30s; keep it within the pod's terminationGracePeriodSeconds)"},
      {"enable-sleep-mode", true, "",
       "serve vLLM's POST /sleep, POST /wake_up and GET /is_sleeping"},
      {"models", false, "A,B,...",
       "one engine per served model name, on --port and the ports after it "
       "(0: free ones), sharing one GPU of --gpu; needs --enable-sleep-mode"},
      {"gpu-memory-utilization", false, "F",
       "with --models: each engine's share of the GPU awake (default 0.9)"},
      {"wake-fails", false, "A,B,...",
       "with --models: these models' engines answer every wake 500 and stay "
       "asleep (a broken engine)"},
      {"host-memory-gib", false, "GIB",
       "with --models: the node's memory for engines asleep (default: the "
       "class's host memory per GPU, less the sleep model's reserved share)"},
      {"help", true, "", "show this help"},
  };
  pilotlight::cmd::ParsedFlags flags;
  if (std::optional<int> exit = pilotlight::cmd::ParseFlagsOrExit(
          std::vector<std::string>(argv + 1, argv + argc), specs,
          "usage: pilotlight-model-server [flags]\n", std::cout, std::cerr,
          flags)) {
    return *exit;
  }
  pilotlight::tools::ModelServerOptions o;
  o.address = flags.String("address").value_or(o.address);
  o.model = flags.String("model").value_or(o.model);
  o.gpu_class = flags.String("gpu").value_or(o.gpu_class);
  o.served_model_name = flags.String("served-model-name").value_or("");
  o.enable_sleep_mode = flags.Bool("enable-sleep-mode");
  const std::string flavor = flags.String("metrics").value_or("vllm");
  if (flavor == "sglang") {
    o.metrics = pilotlight::tools::MetricsFlavor::kSglang;
  } else if (flavor == "tgi") {
    o.metrics = pilotlight::tools::MetricsFlavor::kTgi;
  } else if (flavor == "triton") {
    o.metrics = pilotlight::tools::MetricsFlavor::kTriton;
  } else if (flavor != "vllm") {
    std::cerr << "--metrics " << flavor
              << ": want vllm, sglang, tgi or triton\n";
    return 2;
  }
  for (const auto& [name, target] :
       {std::pair<const char*, int*>{"port", &o.port},
        {"tensor-parallel", &o.tensor_parallel},
        {"max-num-seqs", &o.max_num_seqs},
        {"prompt-tokens", &o.workload.prompt_tokens},
        {"output-tokens", &o.workload.output_tokens},
        {"context", &o.workload.context_tokens}}) {
    absl::StatusOr<std::optional<int>> v = flags.Int(name);
    if (!v.ok()) {
      std::cerr << v.status().message() << "\n";
      return 2;
    }
    if (*v) {
      *target = **v;
    }
  }
  absl::StatusOr<std::optional<double>> scale = flags.Double("time-scale");
  if (!scale.ok()) {
    std::cerr << scale.status().message() << "\n";
    return 2;
  }
  if (*scale) {
    o.time_scale = **scale;
  }
  absl::Duration drain_timeout = absl::Seconds(30);
  if (absl::StatusOr<std::optional<absl::Duration>> d =
          flags.Duration("drain-timeout");
      !d.ok() || (*d && **d < absl::ZeroDuration())) {
    std::cerr << "--drain-timeout: "
              << (d.ok() ? "must be >= 0" : d.status().message()) << "\n";
    return 2;
  } else if (*d) {
    drain_timeout = **d;
  }
  absl::StatusOr<std::optional<double>> slowdown = flags.Double("slowdown");
  if (!slowdown.ok()) {
    std::cerr << slowdown.status().message() << "\n";
    return 2;
  }
  if (*slowdown) {
    o.slowdown = **slowdown;
  }
  // SIGTERM drains (ModelServer::Drain): the health path turns 503, the
  // requests in flight finish, then exit (within the pod's grace period).
  // Blocked here, before any thread starts, and taken by one thread with
  // sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  absl::StatusOr<std::vector<pilotlight::tools::ModelServerOptions>> engines =
      Engines(o, flags);
  if (!engines.ok()) {
    std::cerr << "pilotlight-model-server: " << engines.status().message()
              << "\n";
    return 2;
  }
  std::vector<std::unique_ptr<pilotlight::tools::ModelServer>> servers;
  for (const pilotlight::tools::ModelServerOptions& e : *engines) {
    absl::StatusOr<std::unique_ptr<pilotlight::tools::ModelServer>> server =
        pilotlight::tools::ModelServer::Create(e);
    if (!server.ok()) {
      std::cerr << "pilotlight-model-server: " << server.status().message()
                << "\n";
      return 2;
    }
    absl::StatusOr<int> port = (*server)->Bind();
    if (!port.ok()) {
      std::cerr << "pilotlight-model-server: " << port.status().message()
                << "\n";
      return 1;
    }
    std::cout << "listening on " << e.address << ":" << *port << " ("
              << (*server)->slots() << " slots"
              << (engines->size() > 1 ? ", model " + e.served_model_name : "")
              << (engines->size() > 1 && e.start_asleep ? ", asleep" : "")
              << ")" << std::endl;
    servers.push_back(*std::move(server));
  }
  std::thread stopper([&stop_signals, drain_timeout, &servers] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::vector<std::thread> drains;
    for (const auto& s : servers) {
      drains.emplace_back([&s, drain_timeout] {
        s->Drain(absl::Milliseconds(500), drain_timeout);
      });
    }
    for (std::thread& d : drains) {
      d.join();
    }
  });
  std::vector<std::thread> serving;
  for (size_t i = 1; i < servers.size(); ++i) {
    serving.emplace_back([s = servers[i].get()] { s->Serve(); });
  }
  servers[0]->Serve();  // returns once Drain() has let the requests finish
  for (std::thread& t : serving) {
    t.join();
  }
  // Joined before the servers go (ThreadSanitizer found the detached
  // stopper still reading one in Stop() as main destroyed it); woken first
  // if Serve returned on its own.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  return 0;
}
