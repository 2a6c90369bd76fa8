#include "controller/api/explain.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/base/json_fields.h"

namespace pilotlight::api {
namespace {

using json = nlohmann::json;

std::string Seconds(double s) {
  if (s < 0) {
    return "infinite";
  }
  return s < 120 ? absl::StrFormat("%.0f s", s)
                 : absl::StrFormat("%.1f min", s / 60);
}

std::string Conditions(const json& status) {
  std::string out;
  for (const json& c : ArrayField(status, {"conditions"})) {
    const std::string type = StringField(c, {"type"});
    const std::string state = StringField(c, {"status"});
    absl::StrAppend(&out, out.empty() ? "" : ", ", type, "=", state, " (",
                    StringField(c, {"reason"}), ")");
    const std::string msg = StringField(c, {"message"});
    if (!msg.empty() && state != (type == "Ready" ? "True" : "False")) {
      absl::StrAppend(&out, ": ", msg);
    }
  }
  return out;
}

// `s`, or `fallback` when it is empty (a field the status lacks).
std::string Or(const std::string& s, const char* fallback) {
  return s.empty() ? fallback : s;
}

std::string Endpoint(const json& ia) {
  return absl::StrCat(StringField(ia, {"metadata", "namespace"}), "/",
                      StringField(ia, {"metadata", "name"}));
}

}  // namespace

json ExplainJson(const json& ia) {
  json out = {{"endpoint", Endpoint(ia)},
              {"conditions", ArrayField(ia, {"status", "conditions"})}};
  for (const char* k : {"lastDecision", "replicas", "tier", "keepAliveSeconds",
                        "keepAliveUntil", "coldStart", "economics",
                        "trafficHistory", "counterfactual", "sleepPool"}) {
    out[k] = Field(ia, {"status", k});
  }
  return out;
}

namespace {

// The keep-alive against its break-even T* = B / r.
std::string KeepAliveText(const json& status, const json& e) {
  const double b = DoubleField(e, {"coldStartCostUSD"});
  const double r = DoubleField(e, {"idleCostPerHour"});
  const double t_star = DoubleField(e, {"breakEvenSeconds"}, -1);
  const double keep = DoubleField(status, {"keepAliveSeconds"});
  const double lead = DoubleField(status, {"coldStart", "leadSeconds"});
  return absl::StrFormat(
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
            "than the idle time saved.");
}

// Its engines in spec.sleepPool: "" without one in use.
std::string SleepPoolText(const json& status) {
  const json& p = Field(status, {"sleepPool"});
  if (!p.is_object()) {
    return "";
  }
  const int64_t pods = IntField(p, {"pods"});
  const int64_t busy = IntField(p, {"podsWithAnEngineAwake"});
  const std::string sized = StringField(p, {"sizedTo", "reason"});
  return absl::StrFormat(
      "\nSleep pool %s: %d engine(s) awake, %d asleep. A wake takes %.2f s "
      "against a cold start's %s lead; an engine asleep costs $%.4f/h (its "
      "share of a pool GPU). At zero an engine is its first replica.\n"
      "  %d of the pool's %d Ready pod(s) have an engine awake (any "
      "endpoint's)%s.\n%s",
      Or(StringField(p, {"deployment"}), "?"), IntField(p, {"awake"}),
      IntField(p, {"asleep"}), DoubleField(p, {"wakeSeconds"}),
      Seconds(DoubleField(status, {"coldStart", "leadSeconds"})),
      DoubleField(p, {"asleepCostPerHour"}), busy, pods,
      pods > 0 && busy >= pods
          ? ": none is free, so a wake first puts an idle engine to sleep, "
            "or waits for one (simulate --sleep-pool's PEAK-AWAKE sizes a "
            "pool)"
          : "",
      sized.empty()
          ? ""
          : absl::StrCat("  Pilotlight sizes the pool to ", sized, ".\n"));
}

// The warm pool against the cold starts it prevents.
std::string WarmPoolText(const json& e) {
  const double b = DoubleField(e, {"coldStartCostUSD"});
  const double without =
      DoubleField(e, {"warmPool", "coldStartsPerHourWithout"});
  const double with = DoubleField(e, {"warmPool", "coldStartsPerHourWith"});
  const double warm_cost = DoubleField(e, {"warmPool", "costPerHour"});
  return absl::StrFormat(
      "\nWarm pool %d replica(s), $%.4f/h, against the cold starts it "
      "prevents: rises beyond the spare capacity within one lead, "
      "%.2f/h without it, %.2f/h with it: %.2f/h x B = $%.4f/h "
      "(sized by the cold-start SLO, slo.maxColdStartFraction)\n",
      IntField(e, {"warmPool", "replicas"}), warm_cost, without, with,
      without - with, (without - with) * b);
}

// The demand and the tier table.
std::string TiersText(const json& status, const json& e) {
  std::string out = absl::StrFormat(
      "\nDemand %.2f in flight and queued (stable window), %.2f "
      "forecast one lead ahead -> %d replica(s) of %d concurrent each\n",
      DoubleField(e, {"demand", "concurrency"}),
      DoubleField(e, {"demand", "forecast"}),
      IntField(e, {"demand", "loadReplicas"}),
      IntField(e, {"demand", "capacityPerReplica"}));
  absl::StrAppend(&out,
                  "Tiers, priced for the forecast (* serving; the cheapest "
                  "that meets the SLO wins, after 10 min cheaper):\n",
                  absl::StrFormat("  %-26s %8s %9s %5s %11s %9s  %s\n",
                                  "GPU CLASS", "REPLICAS", "ON-DEMAND", "SPOT",
                                  "CAP/REPLICA", "$/HOUR", "SLO"));
  const std::string tier = StringField(status, {"tier"});
  for (const json& t : ArrayField(e, {"tiers"})) {
    const std::string cls = StringField(t, {"gpuClass"});
    absl::StrAppend(
        &out,
        absl::StrFormat("%s %-26s %8d %9d %5d %11d %9.4f  %s\n",
                        cls == tier ? "*" : " ", cls, IntField(t, {"replicas"}),
                        IntField(t, {"onDemand"}), IntField(t, {"spot"}),
                        IntField(t, {"capacityPerReplica"}),
                        DoubleField(t, {"costPerHour"}),
                        BoolField(t, {"meetsSLO"}) ? "meets" : "misses"));
  }
  return out;
}

// How much of the endpoint's own traffic the controller has recorded.
std::string HistoryText(const json& status) {
  const json& h = Field(status, {"trafficHistory"});
  if (!h.is_object()) {
    return "";
  }
  const int64_t seconds = IntField(h, {"seconds"});
  std::string out = absl::StrFormat(
      "\nTraffic recorded: %s of unbroken history, %d request(s)",
      seconds < 7200
          ? absl::StrFormat("%d min", seconds / 60)
          : absl::StrFormat("%.1f h", static_cast<double>(seconds) / 3600),
      IntField(h, {"requests"}));
  const std::string since = StringField(h, {"since"});
  if (!since.empty()) {
    absl::StrAppend(&out, " since ", since);
  }
  const int64_t gaps = IntField(h, {"gaps"});
  const int64_t jumps = IntField(h, {"clockJumps"});
  if (gaps > 0 || jumps > 0) {
    absl::StrAppend(&out,
                    absl::StrFormat(" (restarted by %d gap(s) without arrival "
                                    "figures, %d clock jump(s))",
                                    gaps, jumps));
  }
  absl::StrAppend(&out, "\n");
  return out;
}

// A candidate's name as the controller wrote it ("keep-alive 5 min").
std::string CandidateName(const json& row) {
  const std::string name = StringField(row, {"name"});
  return name.empty() ? StringField(row, {"policy"}) : name;
}

// The endpoint's recorded traffic replayed through other policies: the
// table, and the cheapest as good as what runs.
std::string CounterfactualText(const json& status) {
  const json& c = Field(status, {"counterfactual"});
  if (!c.is_object()) {
    return "";
  }
  const json& rows = ArrayField(c, {"candidates"});
  if (rows.empty()) {
    return absl::StrCat("\nCounterfactual: ",
                        Or(StringField(c, {"note"}), "no replay yet"), "\n");
  }
  const int64_t window = IntField(c, {"windowSeconds"});
  const int64_t warmup = IntField(c, {"warmupSeconds"});
  std::string out = absl::StrFormat(
      "\nCounterfactual: the last %d min of this endpoint's traffic (to %s; "
      "%d requests measured after a %d min warm-up) replayed through each "
      "policy (* running; ~ remembers more than the warm-up rebuilt):\n"
      "  %-24s %9s %10s %7s\n",
      (window - warmup) / 60, Or(StringField(c, {"time"}), "?"),
      IntField(c, {"requests"}), warmup / 60, "POLICY", "$/HOUR", "WITHIN-SLO",
      "COLD");
  const json* running = nullptr;
  for (const json& r : rows) {
    if (BoolField(r, {"running"})) {
      running = &r;
    }
    absl::StrAppend(
        &out, absl::StrFormat("%s %-24s %9.4f %9.2f%% %6.2f%%\n",
                              BoolField(r, {"running"})            ? "*"
                              : BoolField(r, {"replayedAsItRuns"}) ? " "
                                                                   : "~",
                              CandidateName(r), DoubleField(r, {"costPerHour"}),
                              100 * DoubleField(r, {"sloAttainment"}),
                              100 * DoubleField(r, {"coldStartFraction"})));
  }
  if (running == nullptr) {
    return out;
  }
  // The controller's comparison (status.counterfactual.cheaper).
  const json& cheaper = Field(c, {"cheaper"});
  if (!cheaper.is_object()) {
    absl::StrAppend(&out, "No policy replayed was cheaper at ",
                    CandidateName(*running),
                    "'s attainment and cold share or better.\n");
  } else {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%s would have cost $%.4f/h at the same attainment and cold "
                  "share or better, against $%.4f/h running (%.0f%% less).\n",
                  CandidateName(cheaper), DoubleField(cheaper, {"costPerHour"}),
                  DoubleField(*running, {"costPerHour"}),
                  100 * DoubleField(cheaper, {"saving"})));
  }
  return out;
}

// The spot split and its risk.
std::string SpotText(const json& e, const std::string& spot_replicas) {
  return absl::StrFormat(
      "\nSpot: %s; all on demand would cost $%.4f/h. %s\n",
      spot_replicas + " spot (ready/desired)",
      DoubleField(e, {"onDemandOnlyCostPerHour"}),
      BoolField(e, {"spotUnhealthy"})
          ? "Spot was preempted or unplaceable lately: on-demand stands "
            "in until spot is back (PilotlightSpotFallbackActive)."
          : "Realtime endpoints keep what current demand needs on "
            "on-demand; only headroom goes to spot, so a preemption "
            "costs capacity above demand, not requests.");
}

}  // namespace

std::string ExplainText(const json& ia) {
  const json& status = Field(ia, {"status"});
  const json& e = Field(status, {"economics"});
  std::string out = Endpoint(ia);
  if (!e.is_object() || e.empty()) {
    absl::StrAppend(&out, ": no decision to explain yet\n  ",
                    Conditions(status), "\n");
    return out;
  }
  absl::StrAppend(&out, "  (as of ",
                  Or(StringField(status, {"lastDecision", "time"}), "?"),
                  ")\n");
  absl::StrAppend(&out, "Decision: ",
                  StringField(status, {"lastDecision", "message"}), "\n");
  const std::string od_replicas =
      Or(StringField(status, {"replicas", "onDemand"}), "0/0");
  const std::string spot_replicas =
      Or(StringField(status, {"replicas", "spot"}), "0/0");
  const double cost = DoubleField(e, {"costPerHour"});
  const double always_on = DoubleField(e, {"alwaysOnCostPerHour"});
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "Now: on-demand %s, spot %s (ready/desired) on %s: $%.4f/h; "
          "always-on (never at zero, on demand) $%.4f/h, %s $%.4f/h\n",
          od_replicas, spot_replicas, Or(StringField(status, {"tier"}), "?"),
          cost, always_on, cost <= always_on ? "saving" : "spending",
          std::abs(always_on - cost)));
  absl::StrAppend(
      &out, KeepAliveText(status, e), SleepPoolText(status), WarmPoolText(e),
      TiersText(status, e), SpotText(e, spot_replicas), HistoryText(status),
      CounterfactualText(status), "\nConditions: ", Conditions(status), "\n");
  return out;
}

}  // namespace pilotlight::api
