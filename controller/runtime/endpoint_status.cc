#include "controller/runtime/endpoint_status.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "controller/base/json_fields.h"

namespace pilotlight::runtime {

using json = nlohmann::json;

bool Conditions::Set(const std::string& type, bool status,
                     const std::string& reason, const std::string& message,
                     absl::Time now) {
  auto [it, added] = by_type_.try_emplace(type);
  Condition& c = it->second;
  const bool changed =
      added || c.status != status || c.reason != reason || c.message != message;
  if (added || c.status != status) {
    c.since = now;
  }
  c.status = status;
  c.reason = reason;
  c.message = message;
  return changed;
}

json ToMergePatch(const EndpointStatus& s, const DecisionNote& note) {
  json conditions = json::array();
  for (const auto& [type, c] : s.conditions.all()) {
    conditions.push_back({{"type", type},
                          {"status", c.status ? "True" : "False"},
                          {"reason", c.reason},
                          {"message", c.message.substr(0, 1024)},
                          {"observedGeneration", s.observed_generation},
                          {"lastTransitionTime", FormatRfc3339(c.since)}});
  }
  json out = {{"observedGeneration", s.observed_generation},
              {"conditions", conditions}};
  if (!s.decided) {
    // What was decided before the endpoint stopped being valid no longer
    // holds: clear it.
    for (const char* k :
         {"variants", "replicas", "tier", "warmPool", "concurrencyPerReplica",
          "keepAliveSeconds", "keepAliveUntil", "costPerHour", "coldStart",
          "lastDecision", "economics", "trafficHistory", "counterfactual",
          "sleepPool"}) {
      out[k] = nullptr;
    }
    return out;
  }
  json variants = json::array();
  int od_desired = 0;
  int od_ready = 0;
  int spot_desired = 0;
  int spot_ready = 0;
  for (const VariantStatus& v : s.variants) {
    const bool spot = v.capacity_type == "Spot";
    (spot ? spot_desired : od_desired) += v.desired;
    (spot ? spot_ready : od_ready) += v.ready;
    variants.push_back({{"deployment", v.deployment},
                        {"gpuClass", v.gpu_class},
                        {"capacityType", v.capacity_type},
                        {"desired", v.desired},
                        {"ready", v.ready},
                        {"nodeFree", v.node_free}});
  }
  out["variants"] = variants;
  out["replicas"] = {{"onDemand", absl::StrCat(od_ready, "/", od_desired)},
                     {"spot", absl::StrCat(spot_ready, "/", spot_desired)}};
  out["tier"] = s.tier;
  out["warmPool"] = s.warm_pool;
  out["concurrencyPerReplica"] = s.concurrency_per_replica;
  out["keepAliveSeconds"] = s.keep_alive_seconds;
  out["keepAliveUntil"] =
      s.keep_alive_until ? json(FormatRfc3339(*s.keep_alive_until)) : json();
  out["costPerHour"] = static_cast<double>(s.cost_milli_per_hour) / 1000;
  out["coldStart"] = {
      {"p50Seconds", absl::ToDoubleSeconds(s.cold_start_p50)},
      {"p90Seconds", absl::ToDoubleSeconds(s.cold_start_p90)},
      {"samples", s.cold_start_samples},
      {"leadSeconds", absl::ToDoubleSeconds(s.cold_start_lead)}};
  out["lastDecision"] = {{"time", FormatRfc3339(note.time)},
                         {"reason", s.reason},
                         {"message", note.message.substr(0, 1024)}};
  out["economics"] = note.economics;
  out["trafficHistory"] = note.history;
  out["counterfactual"] = note.counterfactual;
  out["sleepPool"] =
      s.pool
          ? json{{"deployment", s.pool->deployment},
                 {"awake", s.pool->awake},
                 {"asleep", s.pool->asleep},
                 {"wakeSeconds",
                  std::round(absl::ToDoubleSeconds(s.pool->wake) * 100) / 100},
                 {"asleepCostPerHour",
                  static_cast<double>(s.pool->asleep_cost_milli_per_hour) /
                      1000},
                 {"pods", s.pool->pods},
                 {"podsWithAnEngineAwake", s.pool->pods_with_an_engine_awake}}
          : json();
  if (s.pool && !s.pool->sized_by.empty()) {
    out["sleepPool"]["sizedTo"] = {{"pods", s.pool->sized_pods},
                                   {"reason", s.pool->sized_by}};
  }
  return out;
}

json TrafficHistoryJson(const sim::TrafficRecord& r) {
  const bool any = r.covered_since() != absl::InfinitePast();
  return {{"seconds", absl::ToInt64Seconds(r.Covered())},
          {"since", any ? json(FormatRfc3339(r.covered_since())) : json()},
          {"requests", r.CoveredArrivals()},
          {"gaps", r.gaps()},
          {"clockJumps", r.clock_jumps()},
          {"bytes", r.bytes()}};
}

namespace {
// Four decimals: dollars to 1/100 cent, rates to 1/10,000.
double R4(double v) { return std::round(v * 1e4) / 1e4; }
}  // namespace

json EconomicsJson(const policy::Decision& d) {
  if (!d.valid) {
    return nullptr;
  }
  const policy::Economics& e = d.economics;
  json tiers = json::array();
  for (const policy::TierOption& t : e.tiers) {
    tiers.push_back({{"gpuClass", t.gpu_class},
                     {"replicas", t.replicas},
                     {"onDemand", t.on_demand},
                     {"spot", t.spot},
                     {"capacityPerReplica", t.capacity_per_replica},
                     {"costPerHour", R4(t.cost_per_hour)},
                     {"meetsSLO", t.meets_slo}});
  }
  const double break_even = d.break_even < absl::InfiniteDuration()
                                ? absl::ToDoubleSeconds(d.break_even)
                                : -1;
  return {
      {"demand",
       {{"concurrency", R4(d.demand_concurrency)},
        {"forecast", R4(d.forecast_concurrency)},
        {"loadReplicas", d.load_replicas},
        {"capacityPerReplica", d.capacity_per_replica},
        {"modelCapacityPerReplica", d.model_capacity_per_replica},
        {"decodeCalibration", R4(d.decode_calibration)},
        {"calibration", d.calibration}}},
      {"coldStartCostUSD", R4(e.cold_start_cost_usd)},
      {"idleCostPerHour", R4(e.idle_cost_per_hour)},
      {"breakEvenSeconds", R4(break_even)},
      {"coldStartBudget",
       {{"costPerDay", R4(e.budget_cost_per_day)},
        {"coldFractionAtBreakEven", R4(e.cold_fraction_at_break_even)},
        {"coldFractionExpected", R4(e.cold_fraction_expected)},
        {"capped", e.budget_capped}}},
      {"warmPool",
       {{"replicas", d.warm_pool},
        {"costPerHour", R4(e.warm_pool_cost_per_hour)},
        {"coldStartsPerHourWithout", R4(e.cold_starts_per_hour_without_warm)},
        {"coldStartsPerHourWith", R4(e.cold_starts_per_hour_with_warm)}}},
      {"costPerHour", R4(d.cost_per_hour)},
      {"alwaysOnCostPerHour", R4(d.always_on_cost_per_hour)},
      {"onDemandOnlyCostPerHour", R4(e.on_demand_only_cost_per_hour)},
      {"spotUnhealthy", e.spot_unhealthy},
      {"tiers", tiers}};
}

}  // namespace pilotlight::runtime
