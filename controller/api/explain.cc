#include "controller/api/explain.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pilotlight::api {
namespace {

using json = nlohmann::json;

// A field of a JSON object, or `fallback` when it is missing or null.
template <typename T>
T Field(const json& o, const char* key, T fallback) {
  if (!o.is_object() || !o.contains(key) || o.at(key).is_null()) {
    return fallback;
  }
  return o.at(key).get<T>();
}
const json& Object(const json& o, const char* key) {
  static const json kEmpty = json::object();
  return o.is_object() && o.contains(key) && o.at(key).is_object() ? o.at(key)
                                                                   : kEmpty;
}

std::string Seconds(double s) {
  if (s < 0) {
    return "infinite";
  }
  return s < 120 ? absl::StrFormat("%.0f s", s)
                 : absl::StrFormat("%.1f min", s / 60);
}

std::string Conditions(const json& status) {
  std::string out;
  for (const json& c : status.value("conditions", json::array())) {
    absl::StrAppend(&out, out.empty() ? "" : ", ",
                    Field<std::string>(c, "type", ""), "=",
                    Field<std::string>(c, "status", ""), " (",
                    Field<std::string>(c, "reason", ""), ")");
    const std::string msg = Field<std::string>(c, "message", "");
    if (!msg.empty() &&
        Field<std::string>(c, "status", "") !=
            (Field<std::string>(c, "type", "") == "Ready" ? "True" : "False")) {
      absl::StrAppend(&out, ": ", msg);
    }
  }
  return out;
}

}  // namespace

json ExplainJson(const json& ia) {
  const json& meta = Object(ia, "metadata");
  const json& status = Object(ia, "status");
  json out = {
      {"endpoint", absl::StrCat(Field<std::string>(meta, "namespace", ""), "/",
                                Field<std::string>(meta, "name", ""))},
      {"conditions", status.value("conditions", json::array())}};
  for (const char* k : {"lastDecision", "replicas", "tier", "keepAliveSeconds",
                        "keepAliveUntil", "coldStart", "economics"}) {
    out[k] = status.contains(k) ? status.at(k) : json();
  }
  return out;
}

std::string ExplainText(const json& ia) {
  const json& meta = Object(ia, "metadata");
  const json& status = Object(ia, "status");
  const json& last = Object(status, "lastDecision");
  const json& e = Object(status, "economics");
  std::string out = absl::StrCat(Field<std::string>(meta, "namespace", ""), "/",
                                 Field<std::string>(meta, "name", ""));
  if (e.empty()) {
    absl::StrAppend(&out, ": no decision to explain yet\n  ",
                    Conditions(status), "\n");
    return out;
  }
  absl::StrAppend(&out, "  (as of ", Field<std::string>(last, "time", "?"),
                  ")\n");
  absl::StrAppend(&out, "Decision: ", Field<std::string>(last, "message", ""),
                  "\n");
  const json& replicas = Object(status, "replicas");
  const double cost = Field<double>(e, "costPerHour", 0);
  const double always_on = Field<double>(e, "alwaysOnCostPerHour", 0);
  absl::StrAppend(
      &out, absl::StrFormat(
                "Now: on-demand %s, spot %s (ready/desired) on %s: $%.4f/h; "
                "always-on (never at zero, on demand) $%.4f/h, %s $%.4f/h\n",
                Field<std::string>(replicas, "onDemand", "0/0"),
                Field<std::string>(replicas, "spot", "0/0"),
                Field<std::string>(status, "tier", "?"), cost, always_on,
                cost <= always_on ? "saving" : "spending",
                std::abs(always_on - cost)));

  // Keep-alive against its break-even.
  const double b = Field<double>(e, "coldStartCostUSD", 0);
  const double r = Field<double>(e, "idleCostPerHour", 0);
  const double t_star = Field<double>(e, "breakEvenSeconds", -1);
  const double keep = Field<double>(status, "keepAliveSeconds", 0.0);
  const double lead =
      Field<double>(Object(status, "coldStart"), "leadSeconds", 0);
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "\nKeep-alive %s against the break-even T* = B / r = $%.4f / "
          "$%.4f/h = %s\n"
          "  B, one cold start: $%.4f (an idle replica through its %s lead, "
          "plus slo.coldStartPenaltyUSD or as much again)\n"
          "  r, one idle replica: $%.4f/h. %s\n",
          Seconds(keep), b, r, Seconds(t_star), b, Seconds(lead), r,
          // keepAliveSeconds is whole seconds: within one is equal.
          keep > t_star + 1 && t_star >= 0
              ? "Longer than T*: the cold-start SLO needs it (the decision "
                "says by how much)."
          : keep + 1 < t_star
              ? "Shorter than T*: the idle gaps seen end sooner (no gap "
                "longer than this was seen), or one is predicted and the "
                "endpoint pre-warms for it."
              : "Keeping longer than T* costs more in idle GPU than the cold "
                "start it avoids; shorter risks a cold start that costs more "
                "than the idle time saved."));

  // Warm pool against the cold starts it prevents.
  const json& warm = Object(e, "warmPool");
  const double without = Field<double>(warm, "coldStartsPerHourWithout", 0);
  const double with = Field<double>(warm, "coldStartsPerHourWith", 0);
  const double warm_cost = Field<double>(warm, "costPerHour", 0);
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "\nWarm pool %d replica(s), $%.4f/h, against the cold starts it "
          "prevents: rises beyond the spare capacity within one lead, "
          "%.2f/h without it, %.2f/h with it: %.2f/h x B = $%.4f/h "
          "(sized by the cold-start SLO, slo.maxColdStartFraction)\n",
          Field<int>(warm, "replicas", 0), warm_cost, without, with,
          without - with, (without - with) * b));

  // Demand and the tier table.
  const json& demand = Object(e, "demand");
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "\nDemand %.2f in flight and queued (stable window), %.2f "
          "forecast one lead ahead -> %d replica(s) of %d concurrent each\n",
          Field<double>(demand, "concurrency", 0),
          Field<double>(demand, "forecast", 0),
          Field<int>(demand, "loadReplicas", 0),
          Field<int>(demand, "capacityPerReplica", 0)));
  absl::StrAppend(&out,
                  "Tiers, priced for the forecast (* serving; the cheapest "
                  "that meets the SLO wins, after 10 min cheaper):\n",
                  absl::StrFormat("  %-26s %8s %9s %5s %11s %9s  %s\n",
                                  "GPU CLASS", "REPLICAS", "ON-DEMAND", "SPOT",
                                  "CAP/REPLICA", "$/HOUR", "SLO"));
  const std::string tier = Field<std::string>(status, "tier", "");
  for (const json& t : e.value("tiers", json::array())) {
    const std::string cls = Field<std::string>(t, "gpuClass", "");
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "%s %-26s %8d %9d %5d %11d %9.4f  %s\n", cls == tier ? "*" : " ",
            cls, Field<int>(t, "replicas", 0), Field<int>(t, "onDemand", 0),
            Field<int>(t, "spot", 0), Field<int>(t, "capacityPerReplica", 0),
            Field<double>(t, "costPerHour", 0),
            Field<bool>(t, "meetsSLO", false) ? "meets" : "misses"));
  }

  // The spot split and its risk.
  const double od_only = Field<double>(e, "onDemandOnlyCostPerHour", 0);
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "\nSpot: %s; all on demand would cost $%.4f/h. %s\n",
          Field<std::string>(replicas, "spot", "0/0") + " spot (ready/desired)",
          od_only,
          Field<bool>(e, "spotUnhealthy", false)
              ? "Spot was preempted or unplaceable lately: on-demand stands "
                "in until spot is back (PilotlightSpotFallbackActive)."
              : "Realtime endpoints keep what current demand needs on "
                "on-demand; only headroom goes to spot, so a preemption "
                "costs capacity above demand, not requests."));
  absl::StrAppend(&out, "\nConditions: ", Conditions(status), "\n");
  return out;
}

}  // namespace pilotlight::api
