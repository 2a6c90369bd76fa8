#include "controller/cmd/simulate_command.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "controller/base/exit_codes.h"
#include "controller/base/status_macros.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/html_report.h"
#include "controller/cmd/inputs.h"
#include "controller/cmd/simulate_output.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/model/sizing.h"
#include "controller/model/sleep.h"
#include "controller/policy/variant_model.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/match.h"
#include "controller/sim/run.h"

namespace pilotlight::cmd {
namespace {

// What the flags set: straight into the replay's config where they can,
// else here for BuildConfig and RunSimulate to read.
struct SimulateArgs {
  SimulateArgs() {
    config.spec.generation = 1;
    config.spec.max_replicas = 64;
    variant.gpu_class = "a100-80gb";
  }
  sim::SimConfig config;
  std::optional<std::string> trace;
  std::string format = "auto";
  std::string model = "llama-3.1-8b";
  policy::VariantSpec variant;
  bool spot = false;
  bool sleep_pool = false;
  std::optional<absl::Duration> wake;
  std::optional<std::string> policies;
  std::optional<absl::Duration> ttft_per_1k_prompt;
  std::optional<double> knob;
  double match_slo = 0.99;
  CatalogInput catalog;
  TuningInput tuning;
  std::optional<std::string> cold_start_samples;
  std::optional<double> epoch;
  absl::Duration poke_delay = absl::Milliseconds(10);
  bool no_poke = false;
  bool activation_timeout = true;
  std::optional<absl::Duration> start;
  std::optional<absl::Duration> duration;
  std::optional<absl::Duration> max_span;
  std::optional<int> endpoints;
  int seed = 1;
  bool json = false;
  bool progress = true;
  std::optional<std::string> report;
  std::optional<std::string> decision_log;
  std::optional<std::string> timeline;
  std::optional<std::string> requests;
};

// The endpoint the trace is replayed for: model, variant, SLO, bounds.
void DeclareEndpoint(FlagSet& f, SimulateArgs& a) {
  policy::EndpointSpec& s = a.config.spec;
  f.Add("model", &a.model, "NAME", "model preset")
      .Add("gpu", &a.variant.gpu_class, "CLASS", "GPU class of the variant")
      .Add("gpus-per-replica", &a.variant.gpus_per_replica, "N",
           "tensor-parallel degree")
      .Switch("spot", &a.spot,
              "pilotlight also gets a spot variant of the class (baselines "
              "don't)")
      .Custom("mode", "M", "Realtime or Batch", "Realtime",
              [&s](const std::string& m) {
                if (m == "Batch" || m == "batch") {
                  s.mode = policy::Mode::kBatch;
                } else if (m != "Realtime" && m != "realtime") {
                  return absl::InvalidArgumentError(
                      absl::StrCat("--mode ", m, ": want Realtime or Batch"));
                }
                return absl::OkStatus();
              })
      .Add("ttft", &s.slo.ttft, "DURATION", "TTFT SLO")
      .Add("tpot", &s.slo.tpot, "DURATION", "TPOT SLO")
      .Add("ttft-per-1k-prompt", &a.ttft_per_1k_prompt, "DURATION",
           "prompt-length-aware TTFT SLO: allowance per 1000 prompt tokens "
           "added to --ttft (default 0: flat)")
      .Add("max-cold-start-fraction", &s.slo.max_cold_start_fraction, "F",
           "SLO: requests that may meet a cold start")
      .Add("max-keep-alive-cost-per-day",
           &s.slo.max_keep_alive_cost_per_day_usd, "USD",
           "SLO: the most pilotlight's keep-alive may spend a day per "
           "endpoint beyond the ski-rental one to meet the cold-start budget "
           "(slo.maxKeepAliveCostPerDayUSD; default: no bound)")
      .Add("concurrency-per-replica", &s.concurrency_per_replica, "N",
           "override the sizing model's per-replica concurrency (0: the "
           "model's)")
      .Add("max-replicas", &s.max_replicas, "N",
           "the endpoint's replica bound: pilotlight's, and knative's "
           "max-scale");
}

// How the replicas start, are billed and are taken.
void DeclareReplicas(FlagSet& f, SimulateArgs& a) {
  sim::SimConfig& c = a.config;
  f.Add("cold-start", &c.cold_start, "DURATION",
        "fixed cold start (default: the cold-start model's estimate)");
  a.tuning.Declare(
      f,
      "the engine's terms (kind: SizingTuning, as size --validate --fit "
      "--save-tuning writes them): the simulated servers run at them, and "
      "pilotlight sizes with them as the operator does once calibrated");
  f.Add("cold-start-samples", &a.cold_start_samples, "FILE",
        "measured cold starts (CSV, `value` column in ms, .gz ok), one drawn "
        "per new replica")
      .Add("cold-start-resolution", &c.cold_start_resolution, "DURATION",
           "the resolution of the timestamps the controller learns cold "
           "starts from (a pod's creation and Ready stamps: the API "
           "server's; 0: exact)")
      .Add("pool-gpus", &c.pool_gpus, "N",
           "GPUs in the node pool: with all but less than a replica's held, "
           "pilotlight is told no node is free and adds a node's start to "
           "its cold-start lead, as the controller does (0: no bound)")
      .Switch("sleep-pool", &a.sleep_pool,
              "pilotlight keeps an idle endpoint's engine asleep in a shared "
              "pool, on the variant's class, and wakes it for the next "
              "request instead of a cold start (docs/simulator.md, "
              "\"Sleeping engines\"; the baselines have no such tier)")
      .Add("wake", &a.wake, "DURATION",
           "with --sleep-pool: the wake time (default: the sleep model's, "
           "from the weights and the class's host link)")
      .Add("billing", &c.billing_granularity, "DURATION",
           "billing granularity: 1s, 1m, 1h")
      .Add("spot-preemptions-per-hour", &c.spot_preemptions_per_hour, "F",
           "zone-wide spot preemption events per hour per spot variant")
      .Add("spot-notice", &c.spot_notice, "DURATION",
           "each preemption announced this long ahead (AWS: 2m; GCP, "
           "Azure: 30s): replacements start then and the noticed replicas "
           "serve until they are Ready, as the controller does on a node's "
           "notice taint (0: unannounced)")
      .Add("zones", &c.zones, "N", "zones spot replicas spread over");
}

// The controller's clock and the activator in front.
void DeclareControllerAndActivator(FlagSet& f, SimulateArgs& a) {
  sim::SimConfig& c = a.config;
  f.Add("tick", &c.tick, "DURATION",
        "how often the policies are asked (the controller's --tick)")
      .Add("rate-window", &c.prometheus_rate_window, "DURATION",
           "the controller's --rate-window: pilotlight's arrival figure is "
           "the larger of the exact count and the engines' completions over "
           "this window, as the controller merges the activator's count "
           "with Prometheus's rate() (0: the exact count only)")
      .Add("tick-phase", &c.tick_phase, "DURATION",
           "ticks fall at this offset from the trace's start plus whole "
           "ticks, in [0, tick) (a live controller's phase is its own)")
      .Add("epoch", &a.epoch, "UNIX_SECONDS",
           "the simulated clock's Unix time at the replay's start (default "
           "1700000000): where the policy's 10 s buckets and time-of-day "
           "bins fall, as a live controller's clock puts them")
      .Add("report-lag", &c.activator.report_lag, "DURATION",
           "how old the demand each tick sees is: the controller decides on "
           "the activator's last report (one a second), in [0, --tick) (0: "
           "the tick's instant; pilotlight-replay measures the live one)")
      .Add("max-held", &c.activator.max_held, "N",
           "the activator's hold bound: an arrival finding it full and no "
           "free slot is rejected (0: none)")
      .Add("poke-delay", &a.poke_delay, "DURATION",
           "an arrival at zero asks the policy this much later")
      .Switch("no-poke", &a.no_poke,
              "no activator poke: demand at zero waits for the next tick")
      .Add("client-timeout", &c.activator.client_timeout, "DURATION",
           "clients give up on a request not started within DURATION of its "
           "arrival (held at zero or queued) and hang up: "
           "abandoned_requests, misses (default: clients wait)")
      .Add("client-retries", &c.activator.client_retries, "N",
           "clients try a request again, up to N times, when the hold "
           "refuses it (429), the activation timeout answers 503 or "
           "--client-timeout passes: after the activator's Retry-After (1 s, "
           "5 s) or the OpenAI SDKs' back-off (0.5 s doubling); those SDKs' "
           "default is 2")
      .Switch("no-activation-timeout", &a.activation_timeout,
              "held requests wait however long it takes, instead of the "
              "activator's 503 after 1.5 x the predicted cold start + 30 s",
              /*when_given=*/false);
}

// What is replayed, which policies, and what is written.
void DeclareRun(FlagSet& f, SimulateArgs& a) {
  f.Add("trace", &a.trace, "FILE", "request trace (.csv, .jsonl, .gz, .tar.gz)")
      .Add("format", &a.format, "F", "auto azure mooncake alibaba servegen csv")
      .Add("policies", &a.policies, "A,B",
           "policies to run (default all: pilotlight knative keda "
           "keepalive-10m hybrid-histogram always-on oracle)")
      .Add("knob", &a.knob, "F",
           "replay every policy run at this setting of its knob (pilotlight, "
           "knative, keda: target utilisation; keepalive: keep-alive "
           "minutes) instead of its default; the policies without one are "
           "refused")
      .Add("match-slo", &a.match_slo, "F",
           "cost at matched SLO: each policy's cheapest knob setting with at "
           "least this share of requests within SLO and the cold-start "
           "budget (0: skip the sweep)")
      .Add("warmup", &a.config.warmup, "DURATION",
           "the first DURATION of the replay is run but not measured: its "
           "requests are served and not counted, cost counts from its end "
           "(every policy starts a trace at zero, the oracle warm)")
      .Switch("no-idle-skip", &a.config.skip_idle,
              "step every tick through idle time instead of jumping it (same "
              "results, slower; for checking)",
              /*when_given=*/false)
      .Add("start", &a.start, "DURATION", "replay from this offset (default 0)")
      .Add("duration", &a.duration, "DURATION",
           "replay this long (default: all)")
      .Add("endpoints", &a.endpoints, "N",
           "only the first N endpoints (default all)")
      .Add("max-span", &a.max_span, "DURATION",
           "longest first-to-last trace span admitted, also admitting rows "
           "far from the rest (default 31d: such a row is refused as "
           "corrupt; 0: no bound)")
      .Add("seed", &a.seed, "N", "sampling seed for rate traces");
  a.catalog.Declare(f);
  f.Switch("json", &a.json, "print one JSON object")
      .Add("report", &a.report, "FILE.html",
           "write a self-contained HTML report")
      .Add("decision-log", &a.decision_log, "FILE.jsonl",
           "write each of pilotlight's decisions with the demand and "
           "replicas it saw, one JSON line a tick (as `pilotlight controller "
           "--decision-log`; t in seconds from the trace's start)")
      .Add("timeline", &a.timeline, "FILE.csv",
           "write each policy's replicas, ready replicas, demand, cold-start "
           "requests and cost over time (600 points)")
      .Add("requests", &a.requests, "FILE.csv",
           "write every request as it first starts on a replica: policy, "
           "endpoint, arrival, start, TTFT, completion (seconds from the "
           "trace's start), whether it met a cold start, the replica")
      .Switch("no-progress", &a.progress,
              "no progress on stderr (a bar on a terminal, else a line every "
              "10 s)",
              /*when_given=*/false);
}

FlagSet SimulateFlags(SimulateArgs& a) {
  FlagSet f("pilotlight simulate",
            "usage: pilotlight simulate --trace FILE [flags]\n\n"
            "Replays a request trace through Pilotlight's policy core and "
            "the\nbaselines, and compares cost, cold starts and latency.\n\n"
            "Exit codes: 0 done, 2 usage error or unreadable trace, 1 "
            "internal error.\n\nFlags:\n");
  DeclareRun(f, a);
  DeclareEndpoint(f, a);
  DeclareReplicas(f, a);
  DeclareControllerAndActivator(f, a);
  return f;
}

// Every bound a flag's value must keep.
absl::Status CheckRanges(const sim::SimConfig& c) {
  const auto want = [](bool ok, absl::string_view what) {
    return ok ? absl::OkStatus() : absl::InvalidArgumentError(what);
  };
  for (const absl::Status& st :
       {want(c.tick >= absl::Milliseconds(100) && c.tick <= absl::Minutes(1),
             "--tick must be in [100ms, 1m]"),
        want(c.pool_gpus >= 0, "--pool-gpus must be >= 0"),
        want(c.prometheus_rate_window >= absl::ZeroDuration(),
             "--rate-window must be >= 0"),
        want(c.tick_phase >= absl::ZeroDuration() && c.tick_phase < c.tick,
             "--tick-phase must be in [0, --tick)"),
        want(c.cold_start_resolution >= absl::ZeroDuration(),
             "--cold-start-resolution must be >= 0"),
        want(c.activator.report_lag >= absl::ZeroDuration() &&
                 c.activator.report_lag < c.tick,
             "--report-lag must be in [0, --tick)"),
        want(c.warmup >= absl::ZeroDuration(), "--warmup must be >= 0"),
        want(!c.activator.client_timeout ||
                 *c.activator.client_timeout > absl::ZeroDuration(),
             "--client-timeout must be > 0"),
        want(c.activator.client_retries >= 0 &&
                 c.activator.client_retries <= 100,
             "--client-retries must be in [0, 100]"),
        want(c.activator.max_held >= 0 &&
                 (!c.activator.poke_delay ||
                  *c.activator.poke_delay >= absl::ZeroDuration()),
             "--max-held and --poke-delay must be >= 0"),
        want(c.zones >= 1 && c.spot_preemptions_per_hour >= 0 &&
                 c.spot_notice >= absl::ZeroDuration(),
             "--zones must be >= 1, --spot-preemptions-per-hour and "
             "--spot-notice >= 0"),
        want(c.billing_granularity > absl::ZeroDuration(),
             "--billing must be > 0")}) {
    PL_RETURN_IF_ERROR(st);
  }
  return absl::OkStatus();
}

// The pool the endpoint's engines sleep in (policy::PoolSleep), at the
// sleep model's wake time or `wake`; its pods start in the first variant's
// cold start (or `cold_start`).
absl::StatusOr<sim::SleepTier> SleepTierFor(
    const policy::EndpointSpec& s, const model::Catalog& catalog,
    const model::EngineTuning& tuning,
    const std::optional<absl::Duration>& cold_start,
    const std::optional<absl::Duration>& wake) {
  PL_ASSIGN_OR_RETURN(
      const model::SleepEstimate e,
      policy::PoolSleep(s, catalog, s.variants.front().gpu_class,
                        "--sleep-pool"));
  if (wake && *wake <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--wake must be > 0");
  }
  const policy::VariantSpec& v = s.variants.front();
  const model::GpuClass* gpu = catalog.Find(v.gpu_class);
  PL_ASSIGN_OR_RETURN(const policy::VariantModel vm,
                      policy::DeriveVariant(s, 0, catalog, tuning));
  return sim::SleepTier{
      .wake = wake.value_or(e.wake),
      .asleep_price_per_hour = e.asleep_price_per_hour,
      .engines_per_gpu = e.engines_per_gpu,
      .gpus_per_engine = std::max(1, v.gpus_per_replica),
      .gpu_price_per_hour =
          gpu == nullptr ? 0 : gpu->price_on_demand_per_gpu_hour,
      .gpu_class = v.gpu_class,
      .pod_start = cold_start.value_or(vm.cold_start)};
}

// The replay's config from the parsed flags (the ones not bound straight
// into it) and the catalog.
absl::Status BuildConfig(SimulateArgs& a, const model::Catalog& catalog) {
  sim::SimConfig& c = a.config;
  policy::EndpointSpec& s = c.spec;
  PL_ASSIGN_OR_RETURN(s.model, model::FindPreset(a.model));
  policy::VariantSpec v = a.variant;
  v.deployment = absl::StrCat("serve-", v.gpu_class);
  s.variants.push_back(v);
  if (a.spot) {
    v.deployment += "-spot";
    v.capacity = policy::CapacityType::kSpot;
    s.variants.push_back(v);
  }
  PL_ASSIGN_OR_RETURN(c.tuning, a.tuning.Load(c.tuning));
  if (a.sleep_pool) {
    PL_ASSIGN_OR_RETURN(
        c.sleep, SleepTierFor(s, catalog, c.tuning, c.cold_start, a.wake));
  } else if (a.wake) {
    return absl::InvalidArgumentError("--wake needs --sleep-pool");
  }
  if (a.cold_start_samples) {
    sim::BadRows bad;
    PL_ASSIGN_OR_RETURN(c.cold_start_samples,
                        sim::LoadColdStartSamples(*a.cold_start_samples, &bad));
  }
  if (a.epoch) {
    // Within absl::Time's exact range and after 1970: a clock, not a count.
    if (!(*a.epoch >= 0 && *a.epoch < 1e11)) {
      return absl::InvalidArgumentError(
          "--epoch wants Unix seconds in [0, 1e11)");
    }
    c.epoch = absl::UnixEpoch() + absl::Seconds(*a.epoch);
  }
  if (a.ttft_per_1k_prompt) {
    if (*a.ttft_per_1k_prompt < absl::ZeroDuration()) {
      return absl::InvalidArgumentError("--ttft-per-1k-prompt must be >= 0");
    }
    c.ttft_slo_per_prompt_token_s =
        absl::ToDoubleSeconds(*a.ttft_per_1k_prompt) / 1000;
  }
  c.activator.poke_delay = a.poke_delay;
  if (a.no_poke) {
    c.activator.poke_delay.reset();
  }
  c.activator.activation_timeout = a.activation_timeout;
  c.seed = static_cast<uint64_t>(a.seed);
  c.timeline_points = a.report || a.timeline ? 600 : 0;
  c.catalog = &catalog;
  return CheckRanges(c);
}

// The trace, windowed and shaped as the flags say; the endpoint's workload
// is then taken from it.
absl::StatusOr<sim::Trace> LoadTraceFor(SimulateArgs& a,
                                        const model::Catalog& catalog) {
  sim::ServeGenOptions window;
  window.start_s = a.start ? absl::ToDoubleSeconds(*a.start) : 0;
  if (a.duration) {
    window.duration_s = absl::ToDoubleSeconds(*a.duration);
  }
  if (a.max_span) {
    // An explicit span says the trace is meant to be long: rows far from
    // the rest are then data, not corruption.
    window.checks.max_span_s = absl::ToDoubleSeconds(*a.max_span);
    window.checks.reject_isolated = false;
  }
  window.max_endpoints = a.endpoints.value_or(0);
  window.seed = static_cast<uint64_t>(a.seed);
  sim::SimConfig& c = a.config;
  window.input_tokens = static_cast<uint32_t>(c.spec.workload.prompt_tokens);
  window.output_tokens = static_cast<uint32_t>(c.spec.workload.output_tokens);
  PL_ASSIGN_OR_RETURN(const sim::TraceFormat format,
                      sim::ParseTraceFormat(a.format));
  PL_ASSIGN_OR_RETURN(sim::Trace trace,
                      sim::LoadTrace(*a.trace, format, window));
  if (c.warmup > absl::ZeroDuration() &&
      absl::ToDoubleSeconds(c.warmup) >= trace.duration_s) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--warmup %s leaves nothing of the %.0f s trace to measure",
        absl::FormatDuration(c.warmup), trace.duration_s));
  }
  sim::ShapeFromTrace(trace, c.spec);
  PL_RETURN_IF_ERROR(policy::ValidateEndpointSpec(c.spec, catalog));
  return trace;
}

// The logs written while the replay runs: each decision (--decision-log)
// and each request (--requests).
class RunLogs {
 public:
  absl::Status Open(const SimulateArgs& a, sim::SimConfig& c,
                    sim::RunOptions& options) {
    if (a.decision_log) {
      decisions_.open(*a.decision_log);
      if (!decisions_) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot write ", *a.decision_log));
      }
      c.decision_log = [this](const std::string& line) {
        const std::lock_guard<std::mutex> lock(mu_);
        decisions_ << line << "\n";
      };
    }
    if (a.requests) {
      requests_.open(*a.requests);
      if (!requests_) {
        return absl::InvalidArgumentError(
            absl::StrCat("cannot write ", *a.requests));
      }
      requests_ << "policy,endpoint,arrival_s,start_s,ttft_s,done_s,cold,"
                   "replica,variant\n";
      options.request_log = [this](const std::string& policy,
                                   const std::string& endpoint,
                                   const sim::RequestRecord& r) {
        requests_ << absl::StrFormat("%s,%s,%.3f,%.3f,%.4f,%.3f,%d,%d,%d\n",
                                     policy, CsvField(endpoint), r.arrival_s,
                                     r.start_s, r.ttft_s, r.done_s,
                                     r.cold ? 1 : 0, r.replica, r.variant);
      };
    }
    return absl::OkStatus();
  }
  // Whether the requests' CSV was written whole.
  bool RequestsWritten() {
    return !requests_.is_open() || static_cast<bool>(requests_.flush());
  }

 private:
  std::ofstream decisions_;
  std::mutex mu_;
  std::ofstream requests_;
};

// Progress on stderr: on a terminal a bar redrawn at most 10 times a
// second; otherwise (a log, CI) one line every 10 s of a long run.
class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Progress(std::ostream& err)
      : err_(err), tty_(isatty(STDERR_FILENO) != 0) {}

  void operator()(double frac, const std::string& what) {
    const Clock::time_point now = Clock::now();
    if (now < next_draw_ && frac < 1) {
      return;
    }
    if (tty_) {
      next_draw_ = now + std::chrono::milliseconds(100);
      const int width = 30;
      const int filled = static_cast<int>(frac * width);
      err_ << "\r[" << std::string(static_cast<size_t>(filled), '#')
           << std::string(static_cast<size_t>(width - filled), ' ') << "] "
           << absl::StrFormat("%3.0f%% ", 100 * frac) << what.substr(0, 40)
           << std::string(10, ' ') << std::flush;
    } else if (now - started_ >= std::chrono::seconds(10) && frac < 1) {
      next_draw_ = now + std::chrono::seconds(10);
      err_ << absl::StrFormat(
                  "simulate: %.0f%% after %.0f s (%s)\n", 100 * frac,
                  std::chrono::duration<double>(now - started_).count(), what)
           << std::flush;
    } else if (now - started_ < std::chrono::seconds(10)) {
      next_draw_ = started_ + std::chrono::seconds(10);
    }
  }
  // Clears the bar from a terminal.
  void Clear() {
    if (tty_) {
      err_ << "\r" << std::string(90, ' ') << "\r" << std::flush;
    }
  }

 private:
  std::ostream& err_;
  const bool tty_;
  const Clock::time_point started_ = Clock::now();
  Clock::time_point next_draw_ = started_;
};

// The timeline CSV and the HTML report, when asked for.
absl::Status WriteFiles(const SimulateArgs& a, const sim::Trace& trace,
                        const sim::RunReport& report,
                        const std::optional<sim::MatchReport>& match,
                        std::ostream& out) {
  if (a.timeline) {
    std::ofstream csv(*a.timeline);
    csv << "policy,t_s,replicas,ready,demand,cold_start_requests,cost_usd\n";
    for (const sim::PolicyResult& p : report.policies) {
      for (const sim::TimelinePoint& t : p.result.timeline) {
        csv << absl::StrFormat("%s,%.3f,%d,%d,%.3f,%d,%.6f\n", p.name, t.t_s,
                               t.replicas, t.ready, t.demand, t.cold_starts,
                               t.cost_usd);
      }
    }
    if (!csv) {
      return absl::InternalError(absl::StrCat("cannot write ", *a.timeline));
    }
  }
  if (a.report) {
    std::ofstream html(*a.report);
    html << HtmlReport(trace, a.config, report, match ? &*match : nullptr);
    if (!html) {
      return absl::InternalError(absl::StrCat("cannot write ", *a.report));
    }
    if (!a.json) {
      out << "report: " << *a.report << "\n";
    }
  }
  return absl::OkStatus();
}

// Replays the trace, then sweeps every policy's knob for the matched-SLO
// section unless --match-slo 0.
absl::Status Replay(SimulateArgs& a, const sim::Trace& trace,
                    sim::RunOptions& options, sim::RunReport& report,
                    std::optional<sim::MatchReport>& match, double& wall_s) {
  if (!(a.match_slo >= 0 && a.match_slo <= 1)) {
    return absl::InvalidArgumentError(
        "--match-slo wants a share of requests in [0, 1]");
  }
  const auto begin = std::chrono::steady_clock::now();
  PL_ASSIGN_OR_RETURN(report, sim::RunSimulation(trace, a.config, options));
  wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  if (a.match_slo > 0) {
    const auto sweep_progress = [&](double frac, const std::string& what) {
      if (options.progress) {
        options.progress(frac, "sweep: " + what);
      }
    };
    PL_ASSIGN_OR_RETURN(match, sim::MatchSlo(trace, a.config, options.policies,
                                             a.match_slo, sweep_progress));
  }
  return absl::OkStatus();
}

}  // namespace

int RunSimulate(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  SimulateArgs a;
  FlagSet flags = SimulateFlags(a);
  if (std::optional<int> exit = flags.ParseOrExit(args, out, err)) {
    return *exit;
  }
  const auto fail = [&](const absl::Status& st, int code = kExitUsage) {
    err << "pilotlight simulate: " << st.message() << "\n";
    return code;
  };
  if (!a.trace) {
    err << "pilotlight simulate: --trace FILE is required\n" << flags.Help();
    return kExitUsage;
  }
  absl::StatusOr<model::Catalog> catalog = a.catalog.Load();
  if (!catalog.ok()) {
    return fail(catalog.status());
  }
  if (absl::Status st = BuildConfig(a, *catalog); !st.ok()) {
    return fail(st);
  }
  absl::StatusOr<sim::Trace> trace = LoadTraceFor(a, *catalog);
  if (!trace.ok()) {
    return fail(trace.status());
  }
  sim::RunOptions options;
  options.knob = a.knob;
  if (a.policies) {
    options.policies = absl::StrSplit(*a.policies, ',', absl::SkipEmpty());
  }
  RunLogs logs;
  if (absl::Status st = logs.Open(a, a.config, options); !st.ok()) {
    return fail(st);
  }
  Progress progress(err);
  if (a.progress) {
    options.progress = std::ref(progress);
  }
  sim::RunReport report;
  std::optional<sim::MatchReport> match;
  double wall_s = 0;
  const absl::Status replayed =
      Replay(a, *trace, options, report, match, wall_s);
  if (a.progress) {
    progress.Clear();
  }
  if (!replayed.ok()) {
    return fail(replayed);
  }
  PrintRun(*trace, a.config, report, match ? &*match : nullptr, wall_s, a.json,
           out);
  if (!logs.RequestsWritten()) {
    return fail(absl::InternalError(absl::StrCat("cannot write ", *a.requests)),
                kExitInternal);
  }
  if (absl::Status st = WriteFiles(a, *trace, report, match, out); !st.ok()) {
    return fail(st, kExitInternal);
  }
  return kExitOk;
}

}  // namespace pilotlight::cmd
