#include "controller/cmd/simulate_command.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "controller/base/status_macros.h"
#include "controller/cmd/flags.h"
#include "controller/cmd/html_report.h"
#include "controller/cmd/size_command.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/sim/baselines.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/match.h"
#include "controller/sim/run.h"
#include "nlohmann/json.hpp"

namespace pilotlight::cmd {
namespace {

const std::vector<FlagSpec>& SimulateFlags() {
  static const auto* specs = new std::vector<FlagSpec>{
      {"trace", false, "FILE", "request trace (.csv, .jsonl, .gz, .tar.gz)"},
      {"format", false, "F",
       "auto azure mooncake alibaba servegen csv (default auto)"},
      {"model", false, "NAME", "model preset (default llama-3.1-8b)"},
      {"gpu", false, "CLASS", "GPU class of the variant (default a100-80gb)"},
      {"gpus-per-replica", false, "N", "tensor-parallel degree (default 1)"},
      {"spot", true, "",
       "pilotlight also gets a spot variant of the class (baselines don't)"},
      {"mode", false, "M", "Realtime or Batch (default Realtime)"},
      {"policies", false, "A,B",
       "policies to run (default all: pilotlight knative keda keepalive-10m "
       "hybrid-histogram always-on oracle)"},
      {"ttft", false, "DURATION", "TTFT SLO (default 2s)"},
      {"tpot", false, "DURATION", "TPOT SLO (default 80ms)"},
      {"ttft-per-1k-prompt", false, "DURATION",
       "prompt-length-aware TTFT SLO: allowance per 1000 prompt tokens "
       "added to --ttft (default 0: flat)"},
      {"knob", false, "F",
       "replay every policy run at this setting of its knob (pilotlight, "
       "knative, keda: target utilisation; keepalive: keep-alive minutes) "
       "instead of its default; the policies without one are refused"},
      {"match-slo", false, "F",
       "cost at matched SLO: each policy's cheapest knob setting with at "
       "least this share of requests within SLO and the cold-start budget "
       "(default 0.99; 0: skip the sweep)"},
      {"max-cold-start-fraction", false, "F",
       "SLO: requests that may meet a cold start (default 0.01)"},
      {"max-keep-alive-cost-per-day", false, "USD",
       "SLO: the most pilotlight's keep-alive may spend a day per endpoint "
       "beyond the ski-rental one to meet the cold-start budget "
       "(slo.maxKeepAliveCostPerDayUSD; default: no bound)"},
      {"concurrency-per-replica", false, "N",
       "override the sizing model's per-replica concurrency"},
      {"cold-start", false, "DURATION",
       "fixed cold start (default: the cold-start model's estimate)"},
      {"tuning", false, "FILE",
       "the engine's terms (kind: SizingTuning, as size --validate --fit "
       "--save-tuning writes them): the simulated servers run at them, and "
       "pilotlight sizes with them as the operator does once calibrated"},
      {"cold-start-samples", false, "FILE",
       "measured cold starts (CSV, `value` column in ms, .gz ok), one "
       "drawn per new replica"},
      {"tick", false, "DURATION",
       "how often the policies are asked (default 2s, the controller's "
       "--tick)"},
      {"pool-gpus", false, "N",
       "GPUs in the node pool: with all but less than a replica's held, "
       "pilotlight is told no node is free and adds a node's start to its "
       "cold-start lead, as the controller does (default 0: no bound)"},
      {"rate-window", false, "DURATION",
       "the controller's --rate-window: pilotlight's arrival figure is the "
       "larger of the exact count and the engines' completions over this "
       "window, as the controller merges the activator's count with "
       "Prometheus's rate() (default 1m; 0: the exact count only)"},
      {"tick-phase", false, "DURATION",
       "ticks fall at this offset from the trace's start plus whole ticks, "
       "in [0, tick) (default 0; a live controller's phase is its own)"},
      {"epoch", false, "UNIX_SECONDS",
       "the simulated clock's Unix time at the replay's start (default "
       "1700000000): where the policy's 10 s buckets and time-of-day bins "
       "fall, as a live controller's clock puts them"},
      {"billing", false, "DURATION",
       "billing granularity: 1s, 1m, 1h (default 1s)"},
      {"max-replicas", false, "N",
       "the endpoint's replica bound: pilotlight's, and knative's "
       "max-scale (default 64)"},
      {"spot-preemptions-per-hour", false, "F",
       "zone-wide spot preemption events per hour per spot variant "
       "(default 0)"},
      {"zones", false, "N", "zones spot replicas spread over (default 3)"},
      {"max-held", false, "N",
       "the activator's hold bound: an arrival finding it full and no free "
       "slot is rejected (default 1000; 0: none)"},
      {"poke-delay", false, "DURATION",
       "an arrival at zero asks the policy this much later (default 10ms)"},
      {"client-timeout", false, "DURATION",
       "clients give up on a request not started within DURATION of its "
       "arrival (held at zero or queued) and hang up: abandoned_requests, "
       "misses (default: clients wait)"},
      {"client-retries", false, "N",
       "clients try a request again, up to N times, when the hold refuses "
       "it (429), the activation timeout answers 503 or --client-timeout "
       "passes: after the activator's Retry-After (1 s, 5 s) or the OpenAI "
       "SDKs' back-off (0.5 s doubling); those SDKs' default is 2 "
       "(default 0: clients do not retry)"},
      {"no-activation-timeout", true, "",
       "held requests wait however long it takes, instead of the "
       "activator's 503 after 1.5 x the predicted cold start + 30 s "
       "(figures before 2026-12-05)"},
      {"cold-start-resolution", false, "DURATION",
       "the resolution of the timestamps the controller learns cold starts "
       "from (a pod's creation and Ready stamps: the API server's 1s, the "
       "default; 0: exact)"},
      {"report-lag", false, "DURATION",
       "how old the demand each tick sees is: the controller decides on the "
       "activator's last report (one a second), in [0, --tick) (default 0: "
       "the tick's instant; pilotlight-replay measures the live one)"},
      {"warmup", false, "DURATION",
       "the first DURATION of the replay is run but not measured: its "
       "requests are served and not counted, cost counts from its end "
       "(every policy starts a trace at zero, the oracle warm; default 0: "
       "all measured)"},
      {"no-poke", true, "",
       "no activator poke: demand at zero waits for the next tick"},
      {"no-idle-skip", true, "",
       "step every tick through idle time instead of jumping it (same "
       "results, slower; for checking)"},
      {"start", false, "DURATION", "replay from this offset (default 0)"},
      {"duration", false, "DURATION", "replay this long (default: all)"},
      {"endpoints", false, "N", "only the first N endpoints (default all)"},
      {"max-span", false, "DURATION",
       "longest first-to-last trace span admitted, also admitting rows far "
       "from the rest (default 31d: such a row is refused as corrupt; 0: "
       "no bound)"},
      {"seed", false, "N", "sampling seed for rate traces (default 1)"},
      {"catalog", false, "FILE", "GPU catalog YAML (default built-in)"},
      {"json", true, "", "print one JSON object"},
      {"report", false, "FILE.html", "write a self-contained HTML report"},
      {"decision-log", false, "FILE.jsonl",
       "write each of pilotlight's decisions with the demand and replicas "
       "it saw, one JSON line a tick (as `pilotlight controller "
       "--decision-log`; t in seconds from the trace's start)"},
      {"timeline", false, "FILE.csv",
       "write each policy's replicas, ready replicas, demand, cold-start "
       "requests and cost over time (600 points)"},
      {"requests", false, "FILE.csv",
       "write every request as it first starts on a replica: policy, "
       "endpoint, arrival, start, TTFT, completion (seconds from the "
       "trace's start), whether it met a cold start, the replica"},
      {"no-progress", true, "",
       "no progress on stderr (a bar on a terminal, else a line every 10 s)"},
      {"help", true, "", "show this help"},
  };
  return *specs;
}

std::string SimulateUsage() {
  return absl::StrCat(
      "usage: pilotlight simulate --trace FILE [flags]\n\n"
      "Replays a request trace through Pilotlight's policy core and the\n"
      "baselines, and compares cost, cold starts and latency.\n\nFlags:\n",
      FlagsHelp(SimulateFlags()),
      "\nExit codes: 0 done, 2 usage error or unreadable trace, 1 internal "
      "error.\n");
}

absl::Status BuildConfig(const ParsedFlags& f, const model::Catalog& catalog,
                         sim::SimConfig& c) {
  policy::EndpointSpec& s = c.spec;
  s.generation = 1;
  PL_ASSIGN_OR_RETURN(
      s.model, model::FindPreset(f.String("model").value_or("llama-3.1-8b")));
  s.max_replicas = 64;
  PL_RETURN_IF_ERROR(Set(f.Int("max-replicas"), s.max_replicas));
  PL_RETURN_IF_ERROR(Set(f.Duration("ttft"), s.slo.ttft));
  PL_RETURN_IF_ERROR(Set(f.Duration("tpot"), s.slo.tpot));
  PL_RETURN_IF_ERROR(
      Set(f.Double("max-cold-start-fraction"), s.slo.max_cold_start_fraction));
  PL_RETURN_IF_ERROR(Set(f.Double("max-keep-alive-cost-per-day"),
                         s.slo.max_keep_alive_cost_per_day_usd));
  PL_RETURN_IF_ERROR(
      Set(f.Int("concurrency-per-replica"), s.concurrency_per_replica));
  const std::string mode = f.String("mode").value_or("Realtime");
  if (mode == "Batch" || mode == "batch") {
    s.mode = policy::Mode::kBatch;
  } else if (mode != "Realtime" && mode != "realtime") {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode ", mode, ": want Realtime or Batch"));
  }
  policy::VariantSpec v;
  v.gpu_class = f.String("gpu").value_or("a100-80gb");
  v.deployment = absl::StrCat("serve-", v.gpu_class);
  PL_RETURN_IF_ERROR(Set(f.Int("gpus-per-replica"), v.gpus_per_replica));
  s.variants.push_back(v);
  if (f.Bool("spot")) {
    v.deployment += "-spot";
    v.capacity = policy::CapacityType::kSpot;
    s.variants.push_back(v);
  }
  std::optional<absl::Duration> cold;
  PL_RETURN_IF_ERROR(Set(f.Duration("cold-start"), cold));
  c.cold_start = cold;
  PL_ASSIGN_OR_RETURN(c.tuning, LoadTuning(f, c.tuning));
  if (const std::optional<std::string> file = f.String("cold-start-samples")) {
    sim::BadRows bad;
    PL_ASSIGN_OR_RETURN(c.cold_start_samples,
                        sim::LoadColdStartSamples(*file, &bad));
  }
  PL_RETURN_IF_ERROR(Set(f.Duration("billing"), c.billing_granularity));
  PL_RETURN_IF_ERROR(Set(f.Duration("tick"), c.tick));
  if (c.tick < absl::Milliseconds(100) || c.tick > absl::Minutes(1)) {
    return absl::InvalidArgumentError("--tick must be in [100ms, 1m]");
  }
  PL_RETURN_IF_ERROR(Set(f.Int("pool-gpus"), c.pool_gpus));
  if (c.pool_gpus < 0) {
    return absl::InvalidArgumentError("--pool-gpus must be >= 0");
  }
  PL_RETURN_IF_ERROR(Set(f.Duration("rate-window"), c.prometheus_rate_window));
  if (c.prometheus_rate_window < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--rate-window must be >= 0");
  }
  PL_RETURN_IF_ERROR(Set(f.Duration("tick-phase"), c.tick_phase));
  if (c.tick_phase < absl::ZeroDuration() || c.tick_phase >= c.tick) {
    return absl::InvalidArgumentError("--tick-phase must be in [0, --tick)");
  }
  PL_RETURN_IF_ERROR(
      Set(f.Duration("cold-start-resolution"), c.cold_start_resolution));
  if (c.cold_start_resolution < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--cold-start-resolution must be >= 0");
  }
  PL_RETURN_IF_ERROR(Set(f.Duration("report-lag"), c.activator.report_lag));
  if (c.activator.report_lag < absl::ZeroDuration() ||
      c.activator.report_lag >= c.tick) {
    return absl::InvalidArgumentError("--report-lag must be in [0, --tick)");
  }
  PL_RETURN_IF_ERROR(Set(f.Duration("warmup"), c.warmup));
  if (c.warmup < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--warmup must be >= 0");
  }
  std::optional<double> epoch;
  PL_RETURN_IF_ERROR(Set(f.Double("epoch"), epoch));
  if (epoch) {
    // Within absl::Time's exact range and after 1970: a clock, not a count.
    if (!(*epoch >= 0 && *epoch < 1e11)) {
      return absl::InvalidArgumentError(
          "--epoch wants Unix seconds in [0, 1e11)");
    }
    c.epoch = absl::UnixEpoch() + absl::Seconds(*epoch);
  }
  std::optional<absl::Duration> per_1k;
  PL_RETURN_IF_ERROR(Set(f.Duration("ttft-per-1k-prompt"), per_1k));
  if (per_1k) {
    if (*per_1k < absl::ZeroDuration()) {
      return absl::InvalidArgumentError("--ttft-per-1k-prompt must be >= 0");
    }
    c.ttft_slo_per_prompt_token_s = absl::ToDoubleSeconds(*per_1k) / 1000;
  }
  PL_RETURN_IF_ERROR(
      Set(f.Double("spot-preemptions-per-hour"), c.spot_preemptions_per_hour));
  PL_RETURN_IF_ERROR(Set(f.Int("zones"), c.zones));
  PL_RETURN_IF_ERROR(Set(f.Int("max-held"), c.activator.max_held));
  // Into a plain duration: the optional overload would clear the default
  // (10 ms) when the flag is absent, and leave every run without the
  // activator's poke.
  absl::Duration poke_delay =
      c.activator.poke_delay.value_or(absl::ZeroDuration());
  PL_RETURN_IF_ERROR(Set(f.Duration("poke-delay"), poke_delay));
  c.activator.poke_delay = poke_delay;
  PL_RETURN_IF_ERROR(
      Set(f.Duration("client-timeout"), c.activator.client_timeout));
  if (c.activator.client_timeout &&
      *c.activator.client_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--client-timeout must be > 0");
  }
  PL_RETURN_IF_ERROR(Set(f.Int("client-retries"), c.activator.client_retries));
  if (c.activator.client_retries < 0 || c.activator.client_retries > 100) {
    return absl::InvalidArgumentError("--client-retries must be in [0, 100]");
  }
  if (f.Bool("no-activation-timeout")) {
    c.activator.activation_timeout = false;
  }
  if (f.Bool("no-idle-skip")) {
    c.skip_idle = false;
  }
  if (f.Bool("no-poke")) {
    c.activator.poke_delay.reset();
  }
  if (c.activator.max_held < 0 ||
      (c.activator.poke_delay &&
       *c.activator.poke_delay < absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        "--max-held and --poke-delay must be >= 0");
  }
  if (c.zones < 1 || c.spot_preemptions_per_hour < 0) {
    return absl::InvalidArgumentError(
        "--zones must be >= 1 and --spot-preemptions-per-hour >= 0");
  }
  if (c.billing_granularity <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--billing must be > 0");
  }
  c.catalog = &catalog;
  return absl::OkStatus();
}

// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) {
    return v;
  }
  return absl::StrCat("\"", absl::StrReplaceAll(v, {{"\"", "\"\""}}), "\"");
}

std::string Money(double usd) { return absl::StrFormat("%.2f", usd); }

// A share of the requests, 1 with none (as sim::SloAttainment).
double Share(int64_t within, int64_t requests) {
  return requests > 0
             ? static_cast<double>(within) / static_cast<double>(requests)
             : 1;
}

// "2.0s" or "2.0s + 0.30s/1k prompt tokens".
std::string TtftSlo(const sim::SimConfig& c) {
  std::string t =
      absl::StrFormat("%.1fs", absl::ToDoubleSeconds(c.spec.slo.ttft));
  if (c.ttft_slo_per_prompt_token_s > 0) {
    absl::StrAppendFormat(&t, " + %.2fs/1k prompt tokens",
                          c.ttft_slo_per_prompt_token_s * 1000);
  }
  return t;
}

// The matched-SLO section: each policy's cheapest setting within target.
void PrintMatch(const sim::MatchReport& m, std::ostream& out) {
  out << absl::StrFormat(
      "\nAT MATCHED SLO: each policy's cheapest setting with >= %.1f%% of "
      "requests within SLO and <= %.1f%% cold-start requests",
      100 * m.effective, 100 * m.max_cold_start_fraction);
  if (m.effective < m.target) {
    out << absl::StrFormat(
        " (asked %.1f%%; the oracle reaches %.1f%%: its attainment less a "
        "point)",
        100 * m.target, 100 * (m.effective + 0.01));
  }
  out << "\n";
  out << absl::StrFormat("%-17s %-28s %10s %8s %8s %9s\n", "POLICY", "SETTING",
                         "COST-$", "SLO-%", "COLD-%", "TTFT-P99");
  const sim::SweepPoint* oracle = nullptr;
  for (const sim::MatchedPolicy& p : m.policies) {
    if (p.name == "oracle" && p.chosen) {
      oracle = &p.sweep[*p.chosen];
    }
  }
  for (const sim::MatchedPolicy& p : m.policies) {
    if (!p.chosen) {
      // The closest it came: the setting with the highest attainment.
      const auto best = std::max_element(
          p.sweep.begin(), p.sweep.end(),
          [](const sim::SweepPoint& a, const sim::SweepPoint& b) {
            return a.slo_attainment < b.slo_attainment;
          });
      out << absl::StrFormat(
          "%-17s not reached: at best %.2f%% within SLO, %.2f%% cold, $%s%s\n",
          p.name, 100 * best->slo_attainment, 100 * best->cold_start_fraction,
          Money(best->cost_usd),
          best->value ? absl::StrCat(" (", sim::SettingLabel(p, *best), ")")
                      : "");
      continue;
    }
    const sim::SweepPoint& c = p.sweep[*p.chosen];
    out << absl::StrFormat("%-17s %-28s %10s %7.2f%% %7.2f%% %8.2fs", p.name,
                           sim::SettingLabel(p, c), Money(c.cost_usd),
                           100 * c.slo_attainment, 100 * c.cold_start_fraction,
                           c.ttft_p99_s);
    if (oracle != nullptr && oracle->cost_usd > 0 && p.name != "oracle") {
      out << absl::StrFormat("  %.2fx oracle", c.cost_usd / oracle->cost_usd);
    }
    out << "\n";
  }
}

nlohmann::json MatchJson(const sim::MatchReport& m) {
  nlohmann::json j = {{"target", m.target},
                      {"effective_target", m.effective},
                      {"max_cold_start_fraction", m.max_cold_start_fraction},
                      {"policies", nlohmann::json::array()}};
  for (const sim::MatchedPolicy& p : m.policies) {
    nlohmann::json sweep = nlohmann::json::array();
    for (const sim::SweepPoint& s : p.sweep) {
      sweep.push_back({{"value", s.value ? nlohmann::json(*s.value)
                                         : nlohmann::json(nullptr)},
                       {"cost_usd", s.cost_usd},
                       {"slo_attainment", s.slo_attainment},
                       {"cold_start_fraction", s.cold_start_fraction},
                       {"ttft_p99_s", s.ttft_p99_s}});
    }
    nlohmann::json chosen = nullptr;
    if (p.chosen) {
      chosen = sweep[*p.chosen];
    }
    j["policies"].push_back({{"name", p.name},
                             {"knob", p.knob},
                             {"unit", p.unit},
                             {"matched", chosen},
                             {"sweep", sweep}});
  }
  return j;
}

void PrintTable(const sim::Trace& t, const sim::SimConfig& c,
                const sim::RunReport& r, double wall_s, std::ostream& out) {
  out << absl::StrFormat("trace %s (%s): %d requests, %d endpoint(s), %.1f h\n",
                         t.path, sim::TraceFormatName(t.format), r.requests,
                         r.endpoints, r.duration_s / 3600);
  if (c.warmup > absl::ZeroDuration() && !r.policies.empty()) {
    out << absl::StrFormat(
        "warm-up: the first %s replayed, not measured (%d requests measured)\n",
        absl::FormatDuration(c.warmup), r.policies.front().result.requests);
  }
  for (const sim::PolicyResult& p : r.policies) {
    if (p.result.preemptions > 0) {
      out << absl::StrFormat(
          "  %s: %d spot replicas preempted, %d requests retried\n", p.name,
          p.result.preemptions, p.result.retried_requests);
    }
  }
  if (t.bad.count > 0) {
    out << absl::StrFormat("  %d bad rows skipped and counted; first: %s\n",
                           t.bad.count, t.bad.examples.front());
  }
  out << absl::StrFormat(
      "model %s on %s x%d, SLO TTFT %s TPOT %.0fms, cold-start budget "
      "%.1f%%; billing per %s\n\n",
      c.spec.model.name, c.spec.variants[0].gpu_class,
      c.spec.variants[0].gpus_per_replica, TtftSlo(c),
      absl::ToDoubleMilliseconds(c.spec.slo.tpot),
      100 * c.spec.slo.max_cold_start_fraction,
      absl::FormatDuration(c.billing_granularity));
  out << absl::StrFormat("%-17s %10s %9s %9s %8s %9s %9s %8s %8s %8s %7s\n",
                         "POLICY", "COST-$", "GPU-H", "COLD-REQ", "COLD-%",
                         "TTFT-P50", "TTFT-P99", "TTFT-OK", "TPOT-OK", "SLO-%",
                         "SCALES");
  const sim::PolicyResult* oracle = nullptr;
  for (const sim::PolicyResult& p : r.policies) {
    if (p.name == "oracle") {
      oracle = &p;
    }
  }
  for (const sim::PolicyResult& p : r.policies) {
    const sim::SimResult& s = p.result;
    const double n = std::max<double>(1, static_cast<double>(s.requests));
    out << absl::StrFormat(
        "%-17s %10s %9.1f %9d %7.2f%% %8.2fs %8.2fs %7.2f%% %7.2f%% %7.2f%% "
        "%7d",
        p.name, Money(s.cost_usd), s.gpu_seconds / 3600, s.cold_start_requests,
        100.0 * static_cast<double>(s.cold_start_requests) / n,
        s.ttft.Quantile(0.5), s.ttft.Quantile(0.99),
        100.0 * Share(s.within_ttft_slo, s.requests),
        100.0 * Share(s.within_tpot_slo, s.requests),
        100.0 * sim::SloAttainment(s), s.scale_events);
    if (oracle != nullptr && oracle->result.cost_usd > 0 && &p != oracle) {
      out << absl::StrFormat("  %.2fx oracle",
                             s.cost_usd / oracle->result.cost_usd);
    }
    out << "\n";
  }
  out << absl::StrFormat(
      "\nSLO misses by what the request found on arrival:\n"
      "%-17s %11s %19s %20s %15s\n",
      "POLICY", "none ready", "full, one starting", "full, none starting",
      "served at once");
  for (const sim::PolicyResult& p : r.policies) {
    const std::array<int64_t, 4>& m = p.result.slo_misses;
    out << absl::StrFormat("%-17s %11d %19d %20d %15d\n", p.name, m[0], m[1],
                           m[2], m[3]);
  }
  // Requests never served, when there are any: the hold was full (429), the
  // client gave up waiting (--client-timeout), or the activator's
  // activation timeout passed (503); the last two waited, and are also
  // among the misses above, under what they found on arrival. With
  // --client-retries, these are requests whose last try ended so, and a
  // column counts the tries made again.
  const auto any = [&](auto field) {
    return std::any_of(
        r.policies.begin(), r.policies.end(),
        [&](const sim::PolicyResult& p) { return p.result.*field > 0; });
  };
  const bool retries = any(&sim::SimResult::client_retries);
  if (retries || any(&sim::SimResult::rejected_requests) ||
      any(&sim::SimResult::abandoned_requests) ||
      any(&sim::SimResult::activation_timeouts)) {
    out << absl::StrFormat("\nRequests never served:\n%-17s %20s %16s %25s",
                           "POLICY", "refused (hold full)", "gave up waiting",
                           "activation timeout (503)")
        << (retries ? absl::StrFormat(" %18s", "tries made again") : "")
        << "\n";
    for (const sim::PolicyResult& p : r.policies) {
      out << absl::StrFormat(
                 "%-17s %20d %16d %25d", p.name, p.result.rejected_requests,
                 p.result.abandoned_requests, p.result.activation_timeouts)
          << (retries ? absl::StrFormat(" %18d", p.result.client_retries) : "")
          << "\n";
    }
  }
  const double replayed =
      static_cast<double>(r.requests) * static_cast<double>(r.policies.size());
  out << absl::StrFormat(
      "\nreplayed in %.3f s (%.2f M requests/s over %d policies)\n", wall_s,
      wall_s > 0 ? replayed / wall_s / 1e6 : 0.0,
      static_cast<int>(r.policies.size()));
}

nlohmann::json Json(const sim::Trace& t, const sim::RunReport& r) {
  nlohmann::json j;
  j["trace"] = {{"path", t.path},
                {"format", std::string(sim::TraceFormatName(t.format))},
                {"requests", r.requests},
                {"endpoints", r.endpoints},
                {"duration_s", r.duration_s}};
  j["policies"] = nlohmann::json::array();
  for (const sim::PolicyResult& p : r.policies) {
    const sim::SimResult& s = p.result;
    const double n = std::max<double>(1, static_cast<double>(s.requests));
    j["policies"].push_back(
        {{"name", p.name},
         {"cost_usd", s.cost_usd},
         {"gpu_hours", s.gpu_seconds / 3600},
         {"requests", s.requests},
         {"cold_start_requests", s.cold_start_requests},
         {"cold_start_fraction",
          static_cast<double>(s.cold_start_requests) / n},
         {"ttft_p50_s", s.ttft.Quantile(0.5)},
         {"ttft_p99_s", s.ttft.Quantile(0.99)},
         {"ttft_attainment", Share(s.within_ttft_slo, s.requests)},
         {"tpot_attainment", Share(s.within_tpot_slo, s.requests)},
         {"slo_attainment", sim::SloAttainment(s)},
         {"slo_misses",
          {{"none_ready", s.slo_misses[0]},
           {"full_one_starting", s.slo_misses[1]},
           {"full_none_starting", s.slo_misses[2]},
           {"served_at_once", s.slo_misses[3]}}},
         {"rejected_requests", s.rejected_requests},
         {"abandoned_requests", s.abandoned_requests},
         {"activation_timeouts", s.activation_timeouts},
         {"client_retries", s.client_retries},
         {"pokes", s.pokes},
         {"scale_events", s.scale_events}});
  }
  return j;
}

}  // namespace

int RunSimulate(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  absl::StatusOr<ParsedFlags> f = ParseFlags(args, SimulateFlags());
  if (!f.ok()) {
    err << "pilotlight simulate: " << f.status().message() << "\n"
        << SimulateUsage();
    return kExitUsage;
  }
  if (f->Bool("help")) {
    out << SimulateUsage();
    return kExitOk;
  }
  const std::optional<std::string> path = f->String("trace");
  if (!path) {
    err << "pilotlight simulate: --trace FILE is required\n" << SimulateUsage();
    return kExitUsage;
  }
  const auto usage_error = [&](const absl::Status& st) {
    err << "pilotlight simulate: " << st.message() << "\n";
    return kExitUsage;
  };

  absl::StatusOr<model::Catalog> catalog = model::Catalog::Default();
  if (const std::optional<std::string> file = f->String("catalog")) {
    std::ifstream in(*file);
    if (!in) {
      return usage_error(
          absl::NotFoundError(absl::StrCat("cannot read ", *file)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    catalog = model::Catalog::FromYaml(text.str(), *file);
  }
  if (!catalog.ok()) {
    return usage_error(catalog.status());
  }

  sim::SimConfig config;
  if (absl::Status st = BuildConfig(*f, *catalog, config); !st.ok()) {
    return usage_error(st);
  }

  sim::ServeGenOptions window;
  std::optional<absl::Duration> start;
  std::optional<absl::Duration> duration;
  std::optional<absl::Duration> max_span;
  std::optional<int> endpoints;
  std::optional<int> seed;
  for (const absl::Status& st :
       {Set(f->Duration("start"), start),
        Set(f->Duration("duration"), duration),
        Set(f->Duration("max-span"), max_span),
        Set(f->Int("endpoints"), endpoints), Set(f->Int("seed"), seed)}) {
    if (!st.ok()) {
      return usage_error(st);
    }
  }
  if (start) {
    window.start_s = absl::ToDoubleSeconds(*start);
  }
  if (duration) {
    window.duration_s = absl::ToDoubleSeconds(*duration);
  }
  if (max_span) {
    // An explicit span says the trace is meant to be long: rows far from
    // the rest are then data, not corruption.
    window.checks.max_span_s = absl::ToDoubleSeconds(*max_span);
    window.checks.reject_isolated = false;
  }
  if (endpoints) {
    window.max_endpoints = *endpoints;
  }
  if (seed) {
    window.seed = static_cast<uint64_t>(*seed);
    config.seed = static_cast<uint64_t>(*seed);
  }
  window.input_tokens =
      static_cast<uint32_t>(config.spec.workload.prompt_tokens);
  window.output_tokens =
      static_cast<uint32_t>(config.spec.workload.output_tokens);

  absl::StatusOr<sim::TraceFormat> format =
      sim::ParseTraceFormat(f->String("format").value_or("auto"));
  if (!format.ok()) {
    return usage_error(format.status());
  }
  absl::StatusOr<sim::Trace> trace = sim::LoadTrace(*path, *format, window);
  if (!trace.ok()) {
    return usage_error(trace.status());
  }
  if (config.warmup > absl::ZeroDuration() &&
      absl::ToDoubleSeconds(config.warmup) >= trace->duration_s) {
    return usage_error(absl::InvalidArgumentError(absl::StrFormat(
        "--warmup %s leaves nothing of the %.0f s trace to measure",
        absl::FormatDuration(config.warmup), trace->duration_s)));
  }
  sim::ShapeFromTrace(*trace, config.spec);
  if (absl::Status st = policy::ValidateEndpointSpec(config.spec, *catalog);
      !st.ok()) {
    return usage_error(st);
  }

  sim::RunOptions options;
  if (const std::optional<std::string> p = f->String("policies")) {
    options.policies = absl::StrSplit(*p, ',', absl::SkipEmpty());
  }
  if (absl::Status st = Set(f->Double("knob"), options.knob); !st.ok()) {
    return usage_error(st);
  }
  const std::optional<std::string> report_path = f->String("report");
  const std::optional<std::string> timeline_path = f->String("timeline");
  config.timeline_points = report_path || timeline_path ? 600 : 0;
  std::ofstream decision_log;
  std::mutex decision_log_mu;
  if (const std::optional<std::string> log_path = f->String("decision-log")) {
    decision_log.open(*log_path);
    if (!decision_log) {
      err << "pilotlight simulate: cannot write " << *log_path << "\n";
      return kExitUsage;
    }
    config.decision_log = [&](const std::string& line) {
      const std::lock_guard<std::mutex> lock(decision_log_mu);
      decision_log << line << "\n";
    };
  }
  std::ofstream requests_csv;
  const std::optional<std::string> requests_path = f->String("requests");
  if (requests_path) {
    requests_csv.open(*requests_path);
    if (!requests_csv) {
      err << "pilotlight simulate: cannot write " << *requests_path << "\n";
      return kExitUsage;
    }
    requests_csv << "policy,endpoint,arrival_s,start_s,ttft_s,done_s,cold,"
                    "replica,variant\n";
    options.request_log = [&](const std::string& policy,
                              const std::string& endpoint,
                              const sim::RequestRecord& r) {
      requests_csv << absl::StrFormat("%s,%s,%.3f,%.3f,%.4f,%.3f,%d,%d,%d\n",
                                      policy, CsvField(endpoint), r.arrival_s,
                                      r.start_s, r.ttft_s, r.done_s,
                                      r.cold ? 1 : 0, r.replica, r.variant);
    };
  }
  // Progress on stderr: on a terminal a bar redrawn at most 10 times a
  // second; otherwise (a log, CI) one line every 10 s of a long run.
  const bool progress = !f->Bool("no-progress");
  const bool tty = isatty(STDERR_FILENO) != 0;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  Clock::time_point next_draw = started;
  if (progress) {
    options.progress = [&](double frac, const std::string& what) {
      const Clock::time_point now = Clock::now();
      if (now < next_draw && frac < 1) {
        return;
      }
      if (tty) {
        next_draw = now + std::chrono::milliseconds(100);
        const int width = 30;
        const int filled = static_cast<int>(frac * width);
        err << "\r[" << std::string(static_cast<size_t>(filled), '#')
            << std::string(static_cast<size_t>(width - filled), ' ') << "] "
            << absl::StrFormat("%3.0f%% ", 100 * frac) << what.substr(0, 40)
            << std::string(10, ' ') << std::flush;
      } else if (now - started >= std::chrono::seconds(10) && frac < 1) {
        next_draw = now + std::chrono::seconds(10);
        err << absl::StrFormat(
                   "simulate: %.0f%% after %.0f s (%s)\n", 100 * frac,
                   std::chrono::duration<double>(now - started).count(), what)
            << std::flush;
      } else if (now - started < std::chrono::seconds(10)) {
        next_draw = started + std::chrono::seconds(10);
      }
    };
  }
  const auto begin = std::chrono::steady_clock::now();
  absl::StatusOr<sim::RunReport> report =
      sim::RunSimulation(*trace, config, options);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  if (!report.ok()) {
    if (progress && tty) {
      err << "\r" << std::string(90, ' ') << "\r" << std::flush;
    }
    return usage_error(report.status());
  }
  // Cost at matched SLO: every policy's knob swept over the whole trace.
  double match_target = 0.99;
  if (absl::Status st = Set(f->Double("match-slo"), match_target); !st.ok()) {
    return usage_error(st);
  }
  if (!(match_target >= 0 && match_target <= 1)) {
    return usage_error(absl::InvalidArgumentError(
        "--match-slo wants a share of requests in [0, 1]"));
  }
  std::optional<sim::MatchReport> match;
  if (match_target > 0) {
    const auto sweep_progress = [&](double frac, const std::string& what) {
      if (options.progress) {
        options.progress(frac, "sweep: " + what);
      }
    };
    absl::StatusOr<sim::MatchReport> m = sim::MatchSlo(
        *trace, config, options.policies, match_target, sweep_progress);
    if (!m.ok()) {
      return usage_error(m.status());
    }
    match = *std::move(m);
  }
  if (progress && tty) {
    err << "\r" << std::string(90, ' ') << "\r" << std::flush;
  }
  if (f->Bool("json")) {
    nlohmann::json j = Json(*trace, *report);
    j["trace"]["warmup_s"] = absl::ToDoubleSeconds(config.warmup);
    if (match) {
      j["matched_slo"] = MatchJson(*match);
    }
    out << j.dump() << "\n";
  } else {
    PrintTable(*trace, config, *report, wall_s, out);
    if (match) {
      PrintMatch(*match, out);
    }
  }
  if (requests_csv.is_open() && !requests_csv.flush()) {
    err << "pilotlight simulate: cannot write " << *requests_path << "\n";
    return kExitInternal;
  }
  if (timeline_path) {
    std::ofstream csv(*timeline_path);
    csv << "policy,t_s,replicas,ready,demand,cold_start_requests,cost_usd\n";
    for (const sim::PolicyResult& p : report->policies) {
      for (const sim::TimelinePoint& t : p.result.timeline) {
        csv << absl::StrFormat("%s,%.3f,%d,%d,%.3f,%d,%.6f\n", p.name, t.t_s,
                               t.replicas, t.ready, t.demand, t.cold_starts,
                               t.cost_usd);
      }
    }
    if (!csv) {
      err << "pilotlight simulate: cannot write " << *timeline_path << "\n";
      return kExitInternal;
    }
  }
  if (report_path) {
    std::ofstream html(*report_path);
    html << HtmlReport(*trace, config, *report, match ? &*match : nullptr);
    if (!html) {
      err << "pilotlight simulate: cannot write " << *report_path << "\n";
      return kExitInternal;
    }
    if (!f->Bool("json")) {
      out << "report: " << *report_path << "\n";
    }
  }
  return kExitOk;
}

}  // namespace pilotlight::cmd
