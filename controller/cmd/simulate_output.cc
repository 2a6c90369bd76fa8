#include "controller/cmd/simulate_output.h"

#include <algorithm>
#include <array>
#include <optional>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "controller/policy/pool_sizer.h"

namespace pilotlight::cmd {

std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) {
    return v;
  }
  return absl::StrCat("\"", absl::StrReplaceAll(v, {{"\"", "\"\""}}), "\"");
}

namespace {

std::string Money(double usd) { return absl::StrFormat("%.2f", usd); }

// A value, or JSON's null.
nlohmann::json Optional(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

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

}  // namespace

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
      sweep.push_back({{"value", Optional(s.value)},
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

namespace {

// The trace, the warm-up, preemptions, bad rows and the setting.
void PrintHeader(const sim::Trace& t, const sim::SimConfig& c,
                 const sim::RunReport& r, std::ostream& out) {
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
          "  %s: %d spot replicas preempted (%d announced ahead), %d "
          "requests retried\n",
          p.name, p.result.preemptions, p.result.noticed,
          p.result.retried_requests);
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
}

// One line a policy: cost, cold starts, latency, SLO, scale events.
void PrintPolicies(const sim::RunReport& r, std::ostream& out) {
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
    if (s.wakes > 0) {
      out << absl::StrFormat("  %d wakes, %d requests waited for one", s.wakes,
                             s.wake_requests);
    }
    out << "\n";
  }
}

// The sleep pool the policies' engines took (sim::Occupancy), against what
// the replay billed for them.
void PrintPool(const sim::SimConfig& c, const sim::RunReport& r,
               std::ostream& out) {
  if (!c.sleep) {
    return;
  }
  bool header = false;
  for (const sim::PolicyResult& p : r.policies) {
    if (!p.pool) {
      continue;
    }
    if (!header) {
      out << absl::StrFormat(
          "\nSleep pool (%s, %d engines asleep a GPU, one awake; engines "
          "placed anywhere):\n%-17s %12s %11s %10s %9s %12s %13s %14s\n",
          c.sleep->gpu_class, c.sleep->engines_per_gpu, "POLICY", "PEAK-ASLEEP",
          "PEAK-AWAKE", "PEAK-GPUS", "GPU-H", "POOL-COST-$", "FIXED-POOL-$",
          "BILLED-POOL-$");
      header = true;
    }
    const sim::PoolOccupancy& o = *p.pool;
    out << absl::StrFormat(
        "%-17s %12d %11d %10d %9.1f %12s %13s %14s\n", p.name, o.peak_asleep,
        o.peak_awake, o.peak_gpus, o.gpu_hours, Money(o.cost_usd),
        Money(o.fixed_cost_usd),
        Money(p.result.asleep_cost_usd + p.result.woken_cost_usd));
  }
  if (!header) {
    return;
  }
  out << "(POOL-COST: a pool sized at each moment to the engines asleep "
         "and awake; FIXED-POOL: PEAK-GPUS all along; BILLED-POOL: what "
         "the replay billed them, each engine asleep its share and each "
         "woken one as a replica)\n";
  const policy::PoolSizerConfig rule = policy::PoolSizerFor(c.sleep->pod_start);
  out << absl::StrFormat(
      "\nThe same pool sized by the controller (%d spare pod, kept %s; a new "
      "pod Ready %s after it is asked for):\n%-17s %10s %9s %12s %7s %16s "
      "%15s\n",
      rule.spare_pods, absl::FormatDuration(rule.scale_down_window),
      absl::FormatDuration(absl::Trunc(c.sleep->pod_start, absl::Seconds(1))),
      "POLICY", "PEAK-PODS", "GPU-H", "POOL-COST-$", "WAKES", "NO-POD-FREE",
      "SHORT-ENGINE-S");
  for (const sim::PolicyResult& p : r.policies) {
    if (!p.sized_pool) {
      continue;
    }
    const sim::SizedPool& z = *p.sized_pool;
    out << absl::StrFormat("%-17s %10d %9.1f %12s %7d %16d %15.0f\n", p.name,
                           z.peak_pods, z.gpu_hours, Money(z.cost_usd),
                           p.result.wakes, z.wakes_without_a_free_pod,
                           z.engine_seconds_short);
  }
  out << "(NO-POD-FREE: wakes that found every Ready pod's GPU taken by an "
         "engine awake -- the activator puts an idle one to sleep first, or "
         "the wake waits; SHORT-ENGINE-S: engine-seconds awake beyond the "
         "Ready pods)\n";
}

// SLO misses by cause, and the requests never served when there are any.
void PrintMisses(const sim::RunReport& r, std::ostream& out) {
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
}

}  // namespace

void PrintTable(const sim::Trace& t, const sim::SimConfig& c,
                const sim::RunReport& r, double wall_s, std::ostream& out) {
  PrintHeader(t, c, r, out);
  PrintPolicies(r, out);
  PrintPool(c, r, out);
  PrintMisses(r, out);
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
    if (s.wakes > 0) {  // engines woken from the sleep pool
      j["policies"].back()["wakes"] = s.wakes;
      j["policies"].back()["wake_requests"] = s.wake_requests;
    }
    if (p.pool) {  // the pool its engines took (PrintPool)
      j["policies"].back()["sleep_pool"] = {
          {"peak_asleep", p.pool->peak_asleep},
          {"peak_awake", p.pool->peak_awake},
          {"peak_gpus", p.pool->peak_gpus},
          {"gpu_hours", p.pool->gpu_hours},
          {"cost_usd", p.pool->cost_usd},
          {"fixed_cost_usd", p.pool->fixed_cost_usd},
          {"billed_asleep_usd", s.asleep_cost_usd},
          {"billed_woken_usd", s.woken_cost_usd}};
      if (p.sized_pool) {
        j["policies"].back()["sleep_pool"]["sized"] = {
            {"peak_pods", p.sized_pool->peak_pods},
            {"gpu_hours", p.sized_pool->gpu_hours},
            {"cost_usd", p.sized_pool->cost_usd},
            {"wakes_without_a_free_pod",
             p.sized_pool->wakes_without_a_free_pod},
            {"engine_seconds_short", p.sized_pool->engine_seconds_short}};
      }
    }
    if (s.preemptions > 0 || s.noticed > 0) {  // spot preemption runs
      j["policies"].back()["spot_preemptions"] = {
          {"replicas_taken", s.preemptions},
          {"announced_ahead", s.noticed},
          {"requests_retried", s.retried_requests}};
    }
  }
  return j;
}

namespace {

std::string Cost(const std::optional<double>& usd) {
  return usd ? absl::StrCat("$", Money(*usd)) : "never";
}

nlohmann::json RunJson(const sim::PolicyRun& r) {
  return {{"policy", r.policy},
          {"setting", r.setting},
          {"cost_usd", r.point.cost_usd},
          {"slo_attainment", r.point.slo_attainment},
          {"cold_start_fraction", r.point.cold_start_fraction}};
}

}  // namespace

void PrintVerdict(const sim::Verdict& v, std::ostream& out) {
  out << "\nBeaten by a simple policy on this trace? "
      << (v.beaten ? "YES" : "no") << ": pilotlight at its defaults " << v.why
      << "\n";
  for (size_t i = 0; i < v.dominated_by.size() && i < 3; ++i) {
    const sim::PolicyRun& r = v.dominated_by[i];
    out << absl::StrFormat(
        "  dominated by %s (%s): $%s, %.2f %% within SLO, %.2f %% cold\n",
        r.policy, r.setting, Money(r.point.cost_usd),
        100 * r.point.slo_attainment, 100 * r.point.cold_start_fraction);
  }
  if (!v.swept || v.frontier.empty()) {
    return;
  }
  out << absl::StrFormat(
      "  each swept baseline's cost where pilotlight stands ($%s):\n"
      "  %-17s %22s %22s\n",
      Money(v.pilotlight.cost_usd), "POLICY",
      absl::StrFormat("at %.2f %% within SLO",
                      100 * v.pilotlight.slo_attainment),
      absl::StrFormat("at %.2f %% cold",
                      100 * v.pilotlight.cold_start_fraction));
  for (const sim::FrontierCost& f : v.frontier) {
    out << absl::StrFormat("  %-17s %22s %22s\n", f.policy,
                           Cost(f.at_attainment), Cost(f.at_cold_share));
  }
}

nlohmann::json VerdictJson(const sim::Verdict& v) {
  nlohmann::json j = {
      {"beaten", v.beaten},
      {"why", v.why},
      {"pilotlight",
       {{"cost_usd", v.pilotlight.cost_usd},
        {"slo_attainment", v.pilotlight.slo_attainment},
        {"cold_start_fraction", v.pilotlight.cold_start_fraction}}},
      {"dominated_by", nlohmann::json::array()}};
  for (const sim::PolicyRun& r : v.dominated_by) {
    j["dominated_by"].push_back(RunJson(r));
  }
  if (!v.swept) {
    return j;
  }
  j["target"] = v.target;
  j["max_cold_start_fraction"] = v.max_cold_start_fraction;
  j["meets_target"] = v.pilotlight_meets_target;
  j["cheapest_matched_baseline"] =
      v.cheapest_matched ? RunJson(*v.cheapest_matched) : nullptr;
  j["matched_ratio"] = Optional(v.matched_ratio);
  j["frontier"] = nlohmann::json::array();
  for (const sim::FrontierCost& f : v.frontier) {
    j["frontier"].push_back(
        {{"policy", f.policy},
         {"cost_at_pilotlight_attainment_usd", Optional(f.at_attainment)},
         {"cost_at_pilotlight_cold_share_usd", Optional(f.at_cold_share)}});
  }
  return j;
}

void PrintRun(const sim::Trace& t, const sim::SimConfig& c,
              const sim::RunReport& r, const sim::MatchReport* match,
              double wall_s, bool json, std::ostream& out) {
  const std::optional<sim::Verdict> verdict = sim::Judge(r, match);
  if (json) {
    nlohmann::json j = Json(t, r);
    j["trace"]["warmup_s"] = absl::ToDoubleSeconds(c.warmup);
    if (match != nullptr) {
      j["matched_slo"] = MatchJson(*match);
    }
    if (verdict) {
      j["verdict"] = VerdictJson(*verdict);
    }
    out << j.dump() << "\n";
    return;
  }
  PrintTable(t, c, r, wall_s, out);
  if (match != nullptr) {
    PrintMatch(*match, out);
  }
  if (verdict) {
    PrintVerdict(*verdict, out);
  }
}

}  // namespace pilotlight::cmd
