// pilotlight-replay: one slice of a trace replayed live on the local test
// cluster and through `pilotlight simulate` with the same settings, compared
// side by side (docs/replay.md).
//
// Live: a namespace of its own with one Deployment of loopback model
// servers (the sizing model's service times, a cold start set by
// annotation) and an InferenceAutoscaler over it; the real `pilotlight
// controller` (default tick and windows, as the simulator's) and `pilotlight
// activator`; every request of the slice sent through the activator at its
// trace time, streamed, with its first byte, completion and the activator's
// cold-start header recorded; the Deployment's pods sampled every 250 ms.
// Simulated: `pilotlight simulate --policies pilotlight` on the same slice,
// the same SLO, per-replica concurrency, replica bound, and the cold starts
// the live pods were measured to take, on the live run's clock, tick phase
// and demand age (from the controller's decision log), eight draws of the
// cold starts on clocks spread over the tick the live run does not pin:
// the median and the range of those runs against the live figures. --resimulate
// re-runs that side against a finished replay.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controller/cmd/flags.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/kube_config.h"
#include "controller/model/catalog.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/run.h"
#include "controller/sim/trace.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/process.h"
#include "tests/cluster/test_cluster.h"
#include "tests/tools/replay/replay.h"

namespace pilotlight::tools {
namespace {

using json = nlohmann::json;
using testcluster::Process;
using testcluster::Shell;
using testcluster::WaitFor;

// Set by SIGINT/SIGTERM: the replay stops sending, and the namespace, the
// controller and the activator it made are removed before it exits.
std::atomic<bool> g_stop{false};
void OnStopSignal(int /*sig*/) { g_stop.store(true); }

struct Settings {
  std::string trace;
  std::string format = "auto";
  absl::Duration start = absl::ZeroDuration();
  absl::Duration duration = absl::Minutes(3);
  std::string model = "llama-3.1-8b";
  std::string gpu = "a100-80gb";
  double cold_start_s = 10;
  int concurrency = 8;
  int max_replicas = 8;  // the loopback pool has 8 GPUs
  absl::Duration ttft = absl::Seconds(2);
  std::string out = "build/replay";
  std::optional<double> max_diff;
  std::string kubeconfig;
  std::string prometheus;
  std::string pilotlight = "build/controller/cmd/pilotlight";
  int senders = 256;
  std::string policy = "pilotlight";  // or knative
  // Re-run the simulated side against a finished replay's records in this
  // folder (no cluster needed).
  std::optional<std::string> resimulate;
};

// The replay's pods' grace period and their model servers' drain timeout.
constexpr int kDrainSeconds = 60;

// What the live side leaves for the comparison: from a replay just run, or
// read back from its folder (--resimulate).
struct LiveRun {
  std::vector<RequestRecord> records;
  std::vector<TimelineSample> timeline;
  int64_t scale_events = 0;
  std::vector<double> cold_starts;  // pod first seen -> seen Ready, s
  absl::Time t0;                    // the slice's time 0
  // Where the controller's ticks fell against the slice (TickPhase of its
  // decision log); nullopt when it could not be told.
  std::optional<double> tick_phase_s;
  // How old the controller's demand was when it decided (ReportLag).
  std::optional<double> report_lag_s;
};

class Replay {
 public:
  // `shape`: the slice's workload as `pilotlight simulate` derives it
  // (sim::ShapeFromTrace), for the model servers and the endpoint's spec.
  Replay(Settings s, std::vector<sim::Request> requests, model::Workload shape)
      : s_(std::move(s)), requests_(std::move(requests)), shape_(shape) {}
  ~Replay() { TearDown(); }

  absl::Status SetUp();
  // Sends every request at its time; samples the pods until the slice ends
  // and every request is answered.
  void Run();
  void TearDown();

  const std::vector<RequestRecord>& records() const { return records_; }
  const std::vector<TimelineSample>& timeline() const { return timeline_; }
  int64_t scale_events() const { return scale_events_; }
  // Pod first seen -> seen Ready, seconds (250 ms samples).
  const std::vector<double>& cold_starts() const {
    return cold_starts_.cold_starts();
  }
  std::string ns() const { return ns_; }
  // When the slice started (its time 0).
  absl::Time t0() const { return t0_; }
  std::string LogsOf(const std::string& what) const;

 private:
  absl::StatusOr<json> Api(const std::string& method, const std::string& path,
                           const json& body = nullptr);
  void Send(size_t i, absl::Time t0);
  void Sample(absl::Time t0);

  const Settings s_;
  const std::vector<sim::Request> requests_;
  const model::Workload shape_;
  std::unique_ptr<kube::KubeClient> kube_;
  std::string ns_;
  std::unique_ptr<Process> controller_;
  std::unique_ptr<Process> activator_;
  int port_ = 0;
  std::vector<RequestRecord> records_;
  std::vector<TimelineSample> timeline_;
  int64_t scale_events_ = 0;
  int last_desired_ = 0;
  ColdStartTracker cold_starts_;
  absl::Time t0_;
};

absl::StatusOr<json> Replay::Api(const std::string& method,
                                 const std::string& path, const json& body) {
  absl::StatusOr<kube::KubeClient::Response> r =
      kube_->Request(method, path, body.is_null() ? "" : body.dump());
  if (!r.ok()) {
    return r.status();
  }
  return json::parse(r->body, nullptr, false);
}

std::string Replay::LogsOf(const std::string& what) const {
  return absl::StrCat(s_.out, "/", what, ".log");
}

absl::Status Replay::SetUp() {
  absl::StatusOr<kube::KubeConfig> config =
      kube::KubeConfigFromFile(s_.kubeconfig);
  if (!config.ok()) {
    return config.status();
  }
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client =
      kube::KubeClient::Create(*config);
  if (!client.ok()) {
    return client.status();
  }
  kube_ = *std::move(client);
  int rc = 0;
  const std::string kubectl =
      absl::StrCat("kubectl --kubeconfig ", s_.kubeconfig);
  const std::string applied = Shell(
      absl::StrCat(
          kubectl, " apply --server-side --force-conflicts -f deploy/crds/ && ",
          kubectl,
          " wait --for condition=established --timeout=30s -f "
          "deploy/crds/ && ",
          kubectl, " apply --server-side -f deploy/gpuclasses/default.yaml"),
      &rc);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("applying the CRDs and GPU classes failed (run from the "
                     "repository root): ",
                     applied));
  }
  // A replay before this one may still be terminating: its pods hold the
  // pool's GPUs (the controller would see no free node) and its endpoint
  // would be decided for by this run's controller. Wait for it to go.
  std::string left;
  std::string said;
  const bool clear = WaitFor(absl::Seconds(120), [&] {
    left.clear();
    absl::StatusOr<json> all = Api("GET", "/api/v1/namespaces");
    if (!all.ok() || !all->is_object()) {
      return false;
    }
    for (const json& n : all->value("items", json::array())) {
      const std::string name = n["metadata"].value("name", "");
      if (absl::StartsWith(name, "replay-")) {
        absl::StrAppend(&left, left.empty() ? "" : ", ", name, " (",
                        n.value("status", json::object()).value("phase", ""),
                        ")");
      }
    }
    if (!left.empty() && left != said) {
      std::cerr << "replay: waiting for " << left << " to go\n";
      said = left;
    }
    return left.empty();
  });
  if (!clear) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another replay's namespace is still there after 2 min: ", left,
        "; if no replay is running, delete it (kubectl delete namespace "
        "...) and run again"));
  }
  ns_ = absl::StrCat("replay-", ::getpid());
  if (absl::StatusOr<json> r =
          Api("POST", "/api/v1/namespaces", {{"metadata", {{"name", ns_}}}});
      !r.ok()) {
    return r.status();
  }
  json d = json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "replay"},
    "spec": {
      "replicas": 0,
      "selector": {"matchLabels": {"app": "replay"}},
      "template": {
        "metadata": {"labels": {"app": "replay"},
                     "annotations": {"prometheus.io/scrape": "true",
                                     "prometheus.io/port": "8000"}},
        "spec": {
          "tolerations": [
            {"key": "pilotlight.dev/loopback", "operator": "Exists", "effect": "NoSchedule"}],
          "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
            "ports": [{"containerPort": 8000}],
            "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})");
  auto& tmpl = d["spec"]["template"];
  tmpl["metadata"]["annotations"]["pilotlight.dev/cold-start-seconds"] =
      absl::StrCat(s_.cold_start_s);
  tmpl["spec"]["nodeSelector"] = {{"pilotlight.dev/loopback", "true"},
                                  {"pilotlight.dev/gpu-class", s_.gpu},
                                  {"karpenter.sh/capacity-type", "on-demand"}};
  // The model servers are sized for the slice's traffic shape, as the
  // simulator's service model is, so both serve with the same TPOT curve.
  tmpl["spec"]["containers"][0]["args"] = {
      "--model",         s_.model,
      "--gpu",           s_.gpu,
      "--max-num-seqs",  absl::StrCat(s_.concurrency),
      "--prompt-tokens", absl::StrCat(shape_.prompt_tokens),
      "--output-tokens", absl::StrCat(shape_.output_tokens),
      "--context",       absl::StrCat(shape_.context_tokens),
      "--drain-timeout", absl::StrCat(kDrainSeconds, "s")};
  // A scale-down takes the pods the ReplicaSet picks, busy ones too: their
  // streams finish within the grace period (the loopback kubelet honours
  // up to a minute) -- Mooncake's longest generations run ~40 s, past the
  // default 30 s, and were cut (1 request lost per 20-minute replay).
  tmpl["spec"]["terminationGracePeriodSeconds"] = kDrainSeconds;
  if (absl::StatusOr<json> r = Api(
          "POST",
          absl::StrCat("/apis/apps/v1/namespaces/", ns_, "/deployments"), d);
      !r.ok()) {
    return r.status();
  }
  const json ia = {
      {"apiVersion", "pilotlight.dev/v1alpha1"},
      {"kind", "InferenceAutoscaler"},
      {"metadata", {{"name", "replay"}}},
      {"spec",
       {{"model",
         {{"preset", s_.model},
          {"maxContextTokens", shape_.context_tokens},
          {"promptTokens", shape_.prompt_tokens},
          {"outputTokens", shape_.output_tokens}}},
        {"slo",
         {{"ttftSeconds", absl::ToDoubleSeconds(s_.ttft)},
          {"maxColdStartFraction", 0.01}}},
        {"concurrencyPerReplica", s_.concurrency},
        {"variants", json::array({{{"deployment", "replay"},
                                   {"gpuClass", s_.gpu + "-on-demand"}}})},
        {"replicas", {{"min", 0}, {"max", s_.max_replicas}}}}}};
  if (absl::StatusOr<json> r =
          Api("POST",
              absl::StrCat("/apis/pilotlight.dev/v1alpha1/namespaces/", ns_,
                           "/inferenceautoscalers"),
              ia);
      !r.ok()) {
    return r.status();
  }
  // The controller with its defaults (tick 2 s, the policy windows the
  // simulator's decider uses), and the activator in front.
  std::filesystem::remove(absl::StrCat(s_.out, "/live_decisions.jsonl"));
  controller_ = std::make_unique<Process>(
      s_.pilotlight,
      std::vector<std::string>{
          "controller", "--kubeconfig", s_.kubeconfig, "--prometheus",
          s_.prometheus, "--listen", "127.0.0.1:0", "--grpc-listen",
          "127.0.0.1:0", "--no-leader-election", "--policy", s_.policy,
          "--decision-log", absl::StrCat(s_.out, "/live_decisions.jsonl")},
      LogsOf("controller"));
  const int grpc = controller_->LogInt("controller started", "grpc_port");
  if (grpc <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "the controller did not start; its log: ", LogsOf("controller")));
  }
  activator_ = std::make_unique<Process>(
      s_.pilotlight,
      std::vector<std::string>{"activator", "--kubeconfig", s_.kubeconfig,
                               "--controller", absl::StrCat("127.0.0.1:", grpc),
                               "--listen", "127.0.0.1:0", "--admin-listen",
                               "127.0.0.1:0", "--name", "replay"},
      LogsOf("activator"));
  port_ = activator_->LogInt("activator started", "port");
  const int admin = activator_->LogInt("activator started", "admin_port");
  if (port_ <= 0 || admin <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "the activator did not start; its log: ", LogsOf("activator")));
  }
  // Ready once the activator routes the endpoint (its metrics name it).
  const std::string label = absl::StrCat("endpoint=\"", ns_, "/replay\"");
  const bool known = WaitFor(absl::Seconds(30), [&] {
    httplib::Client http("127.0.0.1", admin);
    httplib::Result r = http.Get("/metrics");
    return r && absl::StrContains(r->body, label);
  });
  if (!known) {
    return absl::DeadlineExceededError(
        absl::StrCat("the activator did not learn endpoint ", ns_,
                     "/replay within 30 s; its log: ", LogsOf("activator")));
  }
  return absl::OkStatus();
}

void Replay::Send(size_t i, absl::Time t0) {
  const sim::Request& q = requests_[i];
  RequestRecord& r = records_[i];
  r.due_s = q.arrival_s;
  r.prompt_tokens = q.input_tokens;
  r.output_tokens = std::max<uint32_t>(1, q.output_tokens);
  // The model server counts a prompt's tokens as characters / 4.
  const json body = {{"model", s_.model},
                     {"prompt", std::string(4 * size_t{q.input_tokens}, 'a')},
                     {"max_tokens", r.output_tokens},
                     {"stream", true}};
  httplib::Client c("127.0.0.1", port_);
  c.set_connection_timeout(30);
  c.set_read_timeout(600);
  std::string tail;
  httplib::Request req;
  req.method = "POST";
  req.path = absl::StrCat("/", ns_, "/replay/v1/completions");
  req.body = body.dump();
  req.headers.emplace("Content-Type", "application/json");
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    if (r.first_byte_s < 0) {
      r.first_byte_s = absl::ToDoubleSeconds(absl::Now() - t0);
    }
    tail.append(d, n);
    if (tail.size() > 64) {
      tail.erase(0, tail.size() - 64);
    }
    return true;
  };
  r.sent_s = absl::ToDoubleSeconds(absl::Now() - t0);
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = c.send(req, res, err);
  r.done_s = absl::ToDoubleSeconds(absl::Now() - t0);
  if (!sent) {
    return;
  }
  r.status = res.status;
  r.cold = res.get_header_value("X-Pilotlight-Cold-Start") == "true";
  int64_t held_ms = 0;
  if (absl::SimpleAtoi(res.get_header_value("X-Pilotlight-Held-Ms"),
                       &held_ms)) {
    r.held_s = static_cast<double>(held_ms) / 1000;
  }
  r.body_ok = res.status == 200 && absl::EndsWith(tail, "data: [DONE]\n\n");
}

void Replay::Sample(absl::Time t0) {
  TimelineSample p;
  p.t_s = absl::ToDoubleSeconds(absl::Now() - t0);
  absl::StatusOr<json> pods =
      Api("GET", absl::StrCat("/api/v1/namespaces/", ns_,
                              "/pods?labelSelector=app%3Dreplay"));
  absl::StatusOr<json> d = Api("GET", absl::StrCat("/apis/apps/v1/namespaces/",
                                                   ns_, "/deployments/replay"));
  if (!pods.ok() || !d.ok() || !pods->is_object() || !d->is_object()) {
    return;  // a missed sample: the previous one holds
  }
  for (const json& pod : pods->value("items", json::array())) {
    ++p.replicas;
    const json& meta = pod["metadata"];
    bool ready = false;
    for (const json& c : pod.value("status", json::object())
                             .value("conditions", json::array())) {
      ready = ready || (c.value("type", "") == "Ready" &&
                        c.value("status", "") == "True");
    }
    cold_starts_.Observe(p.t_s, meta.value("name", ""), ready);
    p.ready += ready && !meta.contains("deletionTimestamp") ? 1 : 0;
  }
  const int desired = (*d)["spec"].value("replicas", 0);
  if (desired != last_desired_) {
    ++scale_events_;
    last_desired_ = desired;
  }
  timeline_.push_back(p);
}

void Replay::Run() {
  records_.assign(requests_.size(), RequestRecord{});
  const absl::Time t0 = absl::Now() + absl::Seconds(1);
  t0_ = t0;
  const double window_s = absl::ToDoubleSeconds(s_.duration);
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::vector<std::thread> senders;
  senders.reserve(static_cast<size_t>(s_.senders));
  for (int w = 0; w < s_.senders; ++w) {
    senders.emplace_back([&] {
      for (size_t i = next++; i < requests_.size(); i = next++) {
        const absl::Time due = t0 + absl::Seconds(requests_[i].arrival_s);
        while (!g_stop.load() && absl::Now() < due) {
          absl::SleepFor(std::min(due - absl::Now(), absl::Milliseconds(100)));
        }
        if (g_stop.load()) {
          return;
        }
        Send(i, t0);
        ++done;
      }
    });
  }
  // Pods every 250 ms; progress every 30 s.
  absl::Time next_report = t0 + absl::Seconds(30);
  while (!g_stop.load() &&
         (done.load() < requests_.size() || absl::Now() < t0 + s_.duration)) {
    Sample(t0);
    if (absl::Now() >= next_report) {
      next_report += absl::Seconds(30);
      const TimelineSample& last =
          timeline_.empty() ? TimelineSample{} : timeline_.back();
      std::cerr << absl::StrFormat(
          "replay: %.0f of %.0f s, %zu of %zu requests done, %d replicas "
          "(%d ready)\n",
          absl::ToDoubleSeconds(absl::Now() - t0), window_s, done.load(),
          requests_.size(), last.replicas, last.ready);
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
  if (g_stop.load()) {
    TearDown();  // requests still open end with the activator
  }
  for (std::thread& t : senders) {
    t.join();
  }
}

void Replay::TearDown() {
  activator_.reset();  // SIGTERM, then SIGKILL after 10 s
  controller_.reset();
  if (kube_ && !ns_.empty()) {
    (void)kube_->Request("DELETE", "/api/v1/namespaces/" + ns_, "");
    ns_.clear();
  }
}

void WriteTimeline(const std::string& path,
                   const std::vector<TimelineSample>& timeline) {
  std::ofstream(path) << TimelineCsv(timeline);
}

// From the live controller's decision log (`t` and each sample's `at` in
// Unix seconds, against the slice start t0): where its ticks fell against
// the slice (TickPhase) and how old its demand was (ReportLag).
void ReadDecisionLog(const std::string& path, absl::Duration tick,
                     LiveRun& live) {
  std::ifstream in(path);
  const double t0 = absl::ToDoubleSeconds(live.t0 - absl::UnixEpoch());
  std::vector<double> times;
  std::vector<DemandSample> samples;
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("t") || !j["t"].is_number()) {
      continue;
    }
    times.push_back(j["t"].get<double>() - t0);
    for (const json& d : j.value("samples", json::array())) {
      // Whole samples with both counts.
      if (!d.value("partial", false) && d.contains("at") &&
          d["at"].is_number() && d.contains("in_flight") &&
          d["in_flight"].is_number() && d.contains("queued") &&
          d["queued"].is_number()) {
        samples.push_back(
            {d["at"].get<double>() - t0,
             d["in_flight"].get<double>() + d["queued"].get<double>()});
      }
    }
  }
  live.tick_phase_s = TickPhase(times, absl::ToDoubleSeconds(tick));
  // The activator reports once a second.
  live.report_lag_s = ReportLag(live.records, samples, 1.0);
}

// A finished replay read back from its folder: its records, timeline and
// cold starts, the slice start and the live scale events from
// comparison.json, the tick phase from its decision log.
absl::StatusOr<LiveRun> ReadLiveRun(const std::string& dir,
                                    absl::Duration tick) {
  LiveRun live;
  absl::StatusOr<std::string> text = sim::ReadMaybeGzip(dir + "/requests.csv");
  if (!text.ok()) {
    return text.status();
  }
  absl::StatusOr<std::vector<RequestRecord>> records = ParseRequestsCsv(*text);
  if (!records.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, "/requests.csv: ", records.status().message()));
  }
  live.records = *std::move(records);
  text = sim::ReadMaybeGzip(dir + "/live_timeline.csv");
  if (!text.ok()) {
    return text.status();
  }
  absl::StatusOr<std::vector<TimelineSample>> timeline =
      ParseTimelineCsv(*text);
  if (!timeline.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, "/live_timeline.csv: ", timeline.status().message()));
  }
  live.timeline = *std::move(timeline);
  text = sim::ReadMaybeGzip(dir + "/cold_starts.csv");
  if (text.ok()) {  // milliseconds under a `value` header
    for (absl::string_view v : absl::StrSplit(*text, '\n')) {
      double ms = 0;
      if (absl::SimpleAtod(v, &ms)) {
        live.cold_starts.push_back(ms / 1000);
      }
    }
  }
  text = sim::ReadMaybeGzip(dir + "/comparison.json");
  if (!text.ok()) {
    return text.status();
  }
  const json c = json::parse(*text, nullptr, false);
  if (!c.is_object() || !c.contains("slice_start_unix_s") ||
      !c["slice_start_unix_s"].is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, "/comparison.json has no slice_start_unix_s"));
  }
  live.t0 =
      absl::UnixEpoch() + absl::Seconds(c["slice_start_unix_s"].get<double>());
  for (const json& row : c.value("rows", json::array())) {
    if (row.value("name", "") == "scale events") {
      live.scale_events = std::llround(row.value("live", 0.0));
    }
  }
  ReadDecisionLog(dir + "/live_decisions.jsonl", tick, live);
  return live;
}

// The simulated side: `pilotlight simulate` on the same slice and settings,
// run at each tick phase (where the live controller's ticks fall against
// the trace is its own) and, with measured cold starts, two draws of them.
struct Simulated {
  SimSpread spread;
  std::vector<TimelineSample> timeline;  // of the median replica-seconds run
  std::string command;                   // that run's
  int runs = 0;
  std::string runs_are;  // what varied between the runs, for the printout
};

constexpr absl::Duration kControllerTick = absl::Seconds(2);  // its default
// The loopback kubelet's GPUs per pool (tests/cluster/up): with all of them
// held the live controller sees no free node and prices a node's start into
// its lead; the simulator is told the same pool (--pool-gpus).
constexpr int kLoopbackPoolGpus = 8;

// A simulated run's decision log and per-request records; the median run's
// are kept as sim_decisions.jsonl and sim_requests.csv.
std::string DecisionLogOf(const Settings& s, int phase, int seed) {
  return absl::StrCat(s.out, "/sim_decisions_", phase, "_", seed, ".jsonl");
}
std::string RequestsOf(const Settings& s, int phase, int seed) {
  return absl::StrCat(s.out, "/sim_requests_", phase, "_", seed, ".csv");
}

absl::StatusOr<Simulated> Simulate(const Settings& s, const LiveRun& live,
                                   double price_per_hour) {
  const std::vector<double>& cold_starts = live.cold_starts;
  std::string cold_start_flag;
  if (cold_starts.empty()) {
    cold_start_flag = absl::StrCat(
        " --cold-start ", absl::FormatDuration(absl::Seconds(s.cold_start_s)));
  } else {
    const std::string file = absl::StrCat(s.out, "/cold_starts.csv");
    std::ofstream out(file);
    out << "value\n";  // milliseconds, as --cold-start-samples reads them
    for (double c : cold_starts) {
      out << absl::StrFormat("%.0f\n", c * 1000);
    }
    cold_start_flag = absl::StrCat(" --cold-start-samples ", file);
  }
  const std::string base = absl::StrCat(
      s.pilotlight, " simulate --trace ", s.trace, " --format ", s.format,
      " --start ", absl::FormatDuration(s.start), " --duration ",
      absl::FormatDuration(s.duration), " --endpoints 1 --policies ", s.policy,
      " --model ", s.model, " --gpu ", s.gpu, " --ttft ",
      absl::FormatDuration(s.ttft), " --max-cold-start-fraction 0.01",
      " --concurrency-per-replica ", s.concurrency, " --max-replicas ",
      s.max_replicas, " --pool-gpus ", kLoopbackPoolGpus, cold_start_flag,
      " --tick ", absl::FormatDuration(kControllerTick),
      live.report_lag_s
          ? absl::StrFormat(" --report-lag %dms",
                            std::lround(1000 * *live.report_lag_s))
          : "",
      " --match-slo 0 --no-progress --json");
  const double window_s = absl::ToDoubleSeconds(s.duration);
  struct Run {
    int phase = 0;
    int seed = 0;
    ReplaySummary summary;
    std::vector<TimelineSample> timeline;
    std::string command;
  };
  // At the live controller's own tick phase when its decisions tell it,
  // with eight draws of the live cold starts, draw k on the live slice's
  // clock plus (k - 1) / 4 s; else at four phases (0, 0.5, 1, 1.5 s) with
  // two draws each, on the live clock. (With the annotation's fixed cold
  // start a draw changes nothing: one per phase.) The clock's offsets span
  // one tick, what the live run does not pin down: the controller counts
  // an arrival when the activator's report (one a second) reaches it,
  // reads the engines' running from a scrape up to a second old (what the
  // activator forwarded since counts as waiting), and stamps starts and
  // Readys in whole seconds. So which tick opens a 10 s rise bucket and
  // what it reads there, and whether a 10.2 s cold start reads 10 or
  // 11 s, can go either way (docs/replay.md).
  std::vector<absl::Duration> phases;
  int seeds = cold_starts.empty() ? 1 : 2;
  bool offset_clock = false;
  Simulated out;
  if (live.tick_phase_s && !cold_starts.empty()) {
    const int64_t tick_ms = absl::ToInt64Milliseconds(kControllerTick);
    phases = {
        absl::Milliseconds(std::llround(1000 * *live.tick_phase_s) % tick_ms)};
    seeds = 8;
    offset_clock = true;
    out.runs_are = absl::StrFormat(
        "at the live controller's tick phase, %s, x 8 draws of the live "
        "cold starts, on its clock + 0, 1/4, ..., 7/4 s",
        absl::FormatDuration(phases[0]));
  } else {
    for (int q = 0; q < 4; ++q) {
      phases.push_back(kControllerTick * q / 4);
    }
    out.runs_are = absl::StrCat(
        "tick phases 0, 0.5, 1, 1.5 s",
        cold_starts.empty() ? "" : " x 2 draws of the live cold starts");
  }
  std::vector<Run> runs;
  for (int phase = 0; phase < std::ssize(phases); ++phase) {
    for (int seed = 1; seed <= seeds; ++seed) {
      Run run;
      run.phase = phase;
      run.seed = seed;
      const std::string timeline_csv =
          absl::StrCat(s.out, "/sim_timeline_", phase, "_", seed, ".csv");
      const double clock_offset_s = offset_clock ? (seed - 1) / 4.0 : 0.0;
      run.command = absl::StrCat(
          base,
          absl::StrFormat(" --epoch %.3f",
                          absl::ToDoubleSeconds(live.t0 - absl::UnixEpoch()) +
                              clock_offset_s),
          " --tick-phase ",
          absl::FormatDuration(phases[static_cast<size_t>(phase)]), " --seed ",
          seed, " --timeline ", timeline_csv, " --decision-log ",
          DecisionLogOf(s, phase, seed), " --requests ",
          RequestsOf(s, phase, seed));
      int rc = 0;
      const std::string text = Shell(run.command, &rc);
      const json j = json::parse(text, nullptr, false);
      if (rc != 0 || !j.is_object() || j["policies"].empty()) {
        return absl::InternalError(
            absl::StrCat("`", run.command, "` failed: ", text));
      }
      const json& p = j["policies"][0];
      std::ifstream in(timeline_csv);
      std::string line;
      std::getline(in, line);  // header
      while (std::getline(in, line)) {
        const std::vector<std::string> f = absl::StrSplit(line, ',');
        TimelineSample t;
        if (f.size() >= 4 && absl::SimpleAtod(f[1], &t.t_s) &&
            absl::SimpleAtoi(f[2], &t.replicas) &&
            absl::SimpleAtoi(f[3], &t.ready)) {
          run.timeline.push_back(t);
        }
      }
      in.close();
      std::filesystem::remove(timeline_csv);
      ReplaySummary& r = run.summary;
      r.requests = p.value("requests", 0.0);
      // Refused by the full hold, answered 503 after the activation
      // timeout, or given up by the client: not answered.
      r.answered = r.requests - p.value("rejected_requests", 0.0) -
                   p.value("activation_timeouts", 0.0) -
                   p.value("abandoned_requests", 0.0);
      r.cold_start_requests = p.value("cold_start_requests", 0.0);
      r.scale_events = p.value("scale_events", 0.0);
      r.replica_seconds = ReplicaSeconds(run.timeline, window_s);
      r.ttft_p50_s = p.value("ttft_p50_s", 0.0);
      r.ttft_p99_s = p.value("ttft_p99_s", 0.0);
      r.ttft_attainment = p.value("ttft_attainment", 0.0);
      r.cost_usd = r.replica_seconds * price_per_hour / 3600;
      runs.push_back(std::move(run));
    }
  }
  std::vector<ReplaySummary> summaries;
  summaries.reserve(runs.size());
  for (const Run& r : runs) {
    summaries.push_back(r.summary);
  }
  out.spread = Spread(summaries);
  out.runs = static_cast<int>(runs.size());
  // The run nearest the median replica-seconds stands for the simulator in
  // the overlay and in sim_timeline.csv.
  const Run* pick = &runs.front();
  for (const Run& r : runs) {
    if (std::abs(r.summary.replica_seconds -
                 out.spread.median.replica_seconds) <
        std::abs(pick->summary.replica_seconds -
                 out.spread.median.replica_seconds)) {
      pick = &r;
    }
  }
  out.timeline = pick->timeline;
  out.command = pick->command;
  // Its decisions and requests are kept, the others' removed.
  for (const Run& r : runs) {
    const std::string log = DecisionLogOf(s, r.phase, r.seed);
    const std::string requests = RequestsOf(s, r.phase, r.seed);
    if (&r == pick) {
      std::filesystem::rename(log, absl::StrCat(s.out, "/sim_decisions.jsonl"));
      std::filesystem::rename(requests,
                              absl::StrCat(s.out, "/sim_requests.csv"));
    } else {
      std::filesystem::remove(log);
      std::filesystem::remove(requests);
    }
  }
  WriteTimeline(absl::StrCat(s.out, "/sim_timeline.csv"), out.timeline);
  return out;
}

void WriteFiles(const Settings& s, const LiveRun& live, const Simulated& sim,
                const std::vector<ComparedRow>& rows) {
  namespace fs = std::filesystem;
  if (!s.resimulate ||
      fs::weakly_canonical(*s.resimulate) != fs::weakly_canonical(s.out)) {
    std::ofstream(absl::StrCat(s.out, "/requests.csv"))
        << RequestsCsv(live.records);
    WriteTimeline(absl::StrCat(s.out, "/live_timeline.csv"), live.timeline);
  }
  json j = {{"trace", s.trace},
            {"policy", s.policy},
            {"start_s", absl::ToDoubleSeconds(s.start)},
            // live_decisions.jsonl's t is Unix time: minus this, the
            // slice's time (sim_decisions.jsonl's t).
            {"slice_start_unix_s",
             absl::ToDoubleSeconds(live.t0 - absl::UnixEpoch())},
            {"duration_s", absl::ToDoubleSeconds(s.duration)},
            {"simulate", sim.command},
            {"simulated_runs", absl::StrCat(sim.runs, " ", sim.runs_are)},
            {"rows", json::array()}};
  if (live.tick_phase_s) {
    j["live_tick_phase_s"] = *live.tick_phase_s;
  }
  if (live.report_lag_s) {
    j["live_report_lag_s"] = *live.report_lag_s;
  }
  for (const ComparedRow& r : rows) {
    j["rows"].push_back({{"name", r.name},
                         {"live", r.live},
                         {"sim", r.sim},
                         {"sim_min", r.sim_min},
                         {"sim_max", r.sim_max},
                         {"diff", r.diff}});
  }
  std::ofstream(absl::StrCat(s.out, "/comparison.json")) << j.dump(2) << "\n";
  std::ofstream(absl::StrCat(s.out, "/comparison.html")) << ComparisonHtml(
      absl::StrCat("Live vs simulated (", s.policy,
                   "): ", std::filesystem::path(s.trace).filename().string(),
                   " from ", absl::FormatDuration(s.start), ", ",
                   absl::FormatDuration(s.duration)),
      live.timeline, sim.timeline, rows, absl::ToDoubleSeconds(s.duration));
}

int Main(int argc, char** argv) {
  using cmd::FlagSpec;
  const std::vector<FlagSpec> specs = {
      {"trace", false, "FILE", "request trace (any format simulate reads)"},
      {"format", false, "F", "trace format (default auto)"},
      {"start", false, "DURATION", "slice start in the trace (default 0)"},
      {"duration", false, "DURATION",
       "slice length, replayed in real time "
       "(default 3m)"},
      {"model", false, "NAME", "model preset (default llama-3.1-8b)"},
      {"gpu", false, "CLASS",
       "GPU class of the loopback pool (default a100-80gb)"},
      {"cold-start", false, "DURATION",
       "the loopback pods' cold start (default 10s)"},
      {"concurrency", false, "N",
       "requests per replica at once: the model servers' --max-num-seqs, "
       "the endpoint's concurrencyPerReplica, simulate's "
       "--concurrency-per-replica (default 8)"},
      {"max-replicas", false, "N", "replica bound (default 8)"},
      {"ttft", false, "DURATION", "TTFT SLO (default 2s)"},
      {"senders", false, "N", "sending threads (default 256)"},
      {"policy", false, "NAME",
       "pilotlight (default) or knative: the controller's --policy and the "
       "simulated policy"},
      {"out", false, "DIR", "where the records go (default build/replay)"},
      {"resimulate", false, "DIR",
       "no live run: compare a finished replay's records in DIR (its "
       "requests, timeline, cold starts and decision log) with a new "
       "simulated side, written to DIR (or --out); pass the run's own "
       "--trace, --start, --duration, --concurrency, --max-replicas and "
       "--policy"},
      {"max-diff", false, "F",
       "exit 1 when replica-seconds or cold-start requests differ from "
       "every simulated run's by more than this share, or a request was not "
       "answered"},
      {"kubeconfig", false, "FILE",
       "the test cluster (default $PILOTLIGHT_CLUSTER_DIR/admin.kubeconfig)"},
      {"prometheus", false, "URL",
       "the test cluster's Prometheus (default from its run/ folder)"},
      {"pilotlight", false, "BIN",
       "the pilotlight binary (default build/controller/cmd/pilotlight)"},
      {"help", true, "", "show this help"},
  };
  cmd::ParsedFlags f;
  if (std::optional<int> exit = cmd::ParseFlagsOrExit(
          std::vector<std::string>(argv + 1, argv + argc), specs,
          "usage: pilotlight-replay --trace FILE [flags] (from the repository "
          "root, with tests/cluster/up running)\n",
          std::cout, std::cerr, f)) {
    return *exit;
  }
  Settings s;
  const auto fail = [](const std::string& why) {
    std::cerr << "pilotlight-replay: " << why << "\n";
    return 2;
  };
  if (!f.String("trace")) {
    return fail("--trace FILE is required");
  }
  s.trace = *f.String("trace");
  s.format = f.String("format").value_or(s.format);
  s.model = f.String("model").value_or(s.model);
  s.gpu = f.String("gpu").value_or(s.gpu);
  s.resimulate = f.String("resimulate");
  s.out = f.String("out").value_or(s.resimulate.value_or(s.out));
  s.policy = f.String("policy").value_or(s.policy);
  if (s.policy != "pilotlight" && s.policy != "knative") {
    return fail("--policy " + s.policy + ": want pilotlight or knative");
  }
  s.pilotlight = f.String("pilotlight").value_or(s.pilotlight);
  s.kubeconfig = f.String("kubeconfig")
                     .value_or(testcluster::TestKubeconfig().value_or(""));
  s.prometheus =
      f.String("prometheus").value_or(testcluster::TestPrometheusUrl());
  if (!s.resimulate && (s.kubeconfig.empty() || s.prometheus.empty())) {
    return fail(
        "no test cluster: run tests/cluster/up and set PILOTLIGHT_CLUSTER_DIR "
        "(or pass --kubeconfig and --prometheus)");
  }
  std::optional<absl::Duration> cold;
  for (const absl::Status& st :
       {cmd::Set(f.Duration("start"), s.start),
        cmd::Set(f.Duration("duration"), s.duration),
        cmd::Set(f.Duration("cold-start"), cold),
        cmd::Set(f.Duration("ttft"), s.ttft),
        cmd::Set(f.Int("concurrency"), s.concurrency),
        cmd::Set(f.Int("max-replicas"), s.max_replicas),
        cmd::Set(f.Int("senders"), s.senders),
        cmd::Set(f.Double("max-diff"), s.max_diff)}) {
    if (!st.ok()) {
      return fail(std::string(st.message()));
    }
  }
  if (cold) {
    s.cold_start_s = absl::ToDoubleSeconds(*cold);
  }
  if (s.concurrency < 1 || s.max_replicas < 1 || s.senders < 1 ||
      s.duration <= absl::ZeroDuration()) {
    return fail(
        "--concurrency, --max-replicas, --senders and --duration must be > 0");
  }
  absl::StatusOr<model::Catalog> catalog = model::Catalog::Default();
  absl::StatusOr<const model::GpuClass*> gpu =
      catalog.ok() ? catalog->Get(s.gpu)
                   : absl::StatusOr<const model::GpuClass*>(catalog.status());
  if (!gpu.ok()) {
    return fail(std::string(gpu.status().message()));
  }
  const double price = (*gpu)->price_on_demand_per_gpu_hour;

  absl::StatusOr<sim::TraceFormat> format = sim::ParseTraceFormat(s.format);
  if (!format.ok()) {
    return fail(std::string(format.status().message()));
  }
  sim::ServeGenOptions window;
  window.start_s = absl::ToDoubleSeconds(s.start);
  window.duration_s = absl::ToDoubleSeconds(s.duration);
  window.max_endpoints = 1;
  absl::StatusOr<sim::Trace> trace = sim::LoadTrace(s.trace, *format, window);
  if (!trace.ok()) {
    return fail(std::string(trace.status().message()));
  }
  if (trace->endpoints.empty() && !trace->generate) {
    return fail("the slice has no endpoint");
  }
  std::vector<sim::Request> requests = trace->Endpoint(0).requests;
  if (requests.empty()) {
    return fail("the slice has no request");
  }
  std::filesystem::create_directories(s.out);
  std::cerr << absl::StrFormat(
      "replay: %zu requests over %s of %s from %s, policy %s (cold start "
      "%.1f s, %d per replica, at most %d replicas)\n",
      requests.size(), absl::FormatDuration(s.duration), s.trace,
      absl::FormatDuration(s.start), s.policy, s.cold_start_s, s.concurrency,
      s.max_replicas);

  policy::EndpointSpec spec;
  absl::StatusOr<model::ModelProfile> profile = model::FindPreset(s.model);
  if (!profile.ok()) {
    return fail(std::string(profile.status().message()));
  }
  spec.model = *profile;
  sim::ShapeFromTrace(*trace, spec);
  LiveRun run;
  if (s.resimulate) {
    absl::StatusOr<LiveRun> read = ReadLiveRun(*s.resimulate, kControllerTick);
    if (!read.ok()) {
      return fail(std::string(read.status().message()));
    }
    if (read->records.size() != requests.size()) {
      return fail(absl::StrFormat(
          "%s holds %zu requests, the slice %zu: not this slice's replay "
          "(pass its --trace, --start and --duration)",
          *s.resimulate, read->records.size(), requests.size()));
    }
    run = *std::move(read);
  } else {
    Replay live(s, requests, spec.workload);
    if (absl::Status st = live.SetUp(); !st.ok()) {
      std::cerr << "pilotlight-replay: " << st.message() << "\n";
      return 1;
    }
    std::cerr << "replay: namespace " << live.ns() << ", logs in " << s.out
              << "\n";
    live.Run();
    live.TearDown();
    if (g_stop.load()) {
      std::cerr << "pilotlight-replay: stopped; namespace, controller and "
                   "activator removed\n";
      return 130;
    }
    run.records = live.records();
    run.timeline = live.timeline();
    run.scale_events = live.scale_events();
    run.cold_starts = live.cold_starts();
    run.t0 = live.t0();
    ReadDecisionLog(absl::StrCat(s.out, "/live_decisions.jsonl"),
                    kControllerTick, run);
  }
  const double window_s = absl::ToDoubleSeconds(s.duration);
  const ReplaySummary l =
      SummariseLive(run.records, run.timeline, run.scale_events, window_s,
                    absl::ToDoubleSeconds(s.ttft), price);
  // The simulator gets the cold starts the live pods took (first seen ->
  // seen Ready), not the annotation's: both sides then start replicas
  // equally slowly, and what differs is the control loop and the service.
  // It runs on the live slice's clock (--epoch) and, when the decision log
  // tells it, at the live controller's tick phase.
  absl::StatusOr<Simulated> sim = Simulate(s, run, price);
  if (!sim.ok()) {
    std::cerr << "pilotlight-replay: " << sim.status().message() << "\n";
    return 1;
  }
  std::cout << absl::StrFormat(
      "simulated: %d runs (%s); the median replica-seconds one: %s\n"
      "live pods: %zu started, cold start (first seen -> seen Ready, 250 ms "
      "samples) median %.2f s, p90 %.2f s (annotation %.1f s)\n"
      "live controller: ticks at %s past whole ticks, deciding on demand "
      "%s old\n",
      sim->runs, sim->runs_are, sim->command, run.cold_starts.size(),
      Median(run.cold_starts), Quantile(run.cold_starts, 0.9), s.cold_start_s,
      run.tick_phase_s ? absl::StrFormat("%.3f s", *run.tick_phase_s)
                       : "(not told)",
      run.report_lag_s ? absl::StrFormat("%.2f s", *run.report_lag_s)
                       : "(not told)");
  const std::vector<ComparedRow> rows = Compare(l, sim->spread);
  PrintComparison(rows, std::cout);
  WriteFiles(s, run, *sim, rows);
  std::cout << "records, timelines and the overlay: " << s.out
            << "/comparison.html\n";
  if (l.answered != l.requests) {
    std::cout << "FAIL: " << l.requests - l.answered << " of " << l.requests
              << " requests not answered with a complete stream\n";
    return s.max_diff ? 1 : 0;
  }
  if (s.max_diff) {
    for (const ComparedRow& r : rows) {
      if ((r.name == "replica-seconds" || r.name == "cold-start requests") &&
          std::abs(r.BeyondSpread()) > *s.max_diff) {
        std::cout << absl::StrFormat(
            "FAIL: %s differ from the nearest simulated run's by %+.1f%% "
            "(bound %.0f%%)\n",
            r.name, 100 * r.BeyondSpread(), 100 * *s.max_diff);
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace pilotlight::tools

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  struct sigaction stop = {};
  stop.sa_handler = pilotlight::tools::OnStopSignal;
  ::sigaction(SIGINT, &stop, nullptr);
  ::sigaction(SIGTERM, &stop, nullptr);
  return pilotlight::tools::Main(argc, argv);
}
