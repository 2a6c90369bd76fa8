// `pilotlight explain` from a status as the controller writes it: the
// keep-alive against T* = B / r with the numbers, the warm pool against
// the cold starts it prevents, the tier table with the serving tier
// marked, the spot split; before any decision, the conditions that say
// why not; --json carries the same facts.
#include "controller/api/explain.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pilotlight::api {
namespace {

using json = nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

json Decided(bool spot_unhealthy) {
  json ia = json::parse(R"({
    "metadata": {"namespace": "demo", "name": "chat"},
    "status": {
      "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled", "message": ""}],
      "replicas": {"onDemand": "2/2", "spot": "1/1"},
      "tier": "a100-80gb-on-demand",
      "keepAliveSeconds": 240,
      "coldStart": {"leadSeconds": 60},
      "lastDecision": {"time": "2026-12-03T06:00:00Z", "reason": "WarmPool",
                       "message": "WarmPool: demand 80.0 in flight"},
      "economics": {
        "demand": {"concurrency": 80, "forecast": 95.5, "loadReplicas": 2, "capacityPerReplica": 64},
        "coldStartCostUSD": 0.1144, "idleCostPerHour": 3.4309, "breakEvenSeconds": 120,
        "warmPool": {"replicas": 1, "costPerHour": 3.4309,
                     "coldStartsPerHourWithout": 9, "coldStartsPerHourWith": 0.6},
        "costPerHour": 8.2318, "alwaysOnCostPerHour": 6.8618,
        "onDemandOnlyCostPerHour": 10.2927,
        "tiers": [
          {"gpuClass": "a100-80gb-on-demand", "replicas": 2, "onDemand": 2, "spot": 0,
           "capacityPerReplica": 64, "costPerHour": 6.8618, "meetsSLO": true},
          {"gpuClass": "l4-on-demand", "replicas": 12, "onDemand": 12, "spot": 0,
           "capacityPerReplica": 8, "costPerHour": 9.6576, "meetsSLO": false}]}}})");
  ia["status"]["economics"]["spotUnhealthy"] = spot_unhealthy;
  return ia;
}

TEST(ExplainTest, ADecisionInDollars) {
  const std::string text = ExplainText(Decided(false));
  EXPECT_THAT(text, HasSubstr("demo/chat  (as of 2026-12-03T06:00:00Z)"));
  EXPECT_THAT(text, HasSubstr("Decision: WarmPool: demand 80.0 in flight"));
  EXPECT_THAT(text, HasSubstr("Keep-alive 4.0 min against the break-even "
                              "T* = B / r = $0.1144 / $3.4309/h = 2.0 min"));
  EXPECT_THAT(text, HasSubstr("Longer than T*: the cold-start SLO needs it"));
  EXPECT_THAT(text, HasSubstr("9.00/h without it, 0.60/h with it: 8.40/h x "
                              "B = $0.9610/h"));
  EXPECT_THAT(text, HasSubstr("* a100-80gb-on-demand"));
  EXPECT_THAT(text, HasSubstr("  l4-on-demand"));
  EXPECT_THAT(text, HasSubstr("misses"));
  EXPECT_THAT(text, HasSubstr("all on demand would cost $10.2927/h"));
  EXPECT_THAT(text, HasSubstr("spending $1.3700/h"));  // above always-on
  EXPECT_THAT(text, Not(HasSubstr("preempted")));
  EXPECT_THAT(ExplainText(Decided(true)),
              HasSubstr("Spot was preempted or unplaceable lately"));
}

TEST(ExplainTest, KeepAliveAgainstBreakEven) {
  struct Case {
    int keep;
    const char* says;
  };
  for (const Case& c :
       {Case{120, "Keeping longer than T* costs more"},
        Case{121, "Keeping longer than T* costs more"},
        Case{30, "Shorter than T*"}, Case{600, "Longer than T*"}}) {
    json ia = Decided(false);
    ia["status"]["keepAliveSeconds"] = c.keep;
    EXPECT_THAT(ExplainText(ia), HasSubstr(c.says)) << c.keep;
  }
}

TEST(ExplainTest, NothingDecidedYetSaysWhy) {
  const json ia = json::parse(R"({
    "metadata": {"namespace": "demo", "name": "chat"},
    "status": {"conditions": [{"type": "Ready", "status": "False",
      "reason": "InvalidSpec", "message": "spec.variants[0].gpuClass: no GPUClass h900"}]}})");
  EXPECT_THAT(ExplainText(ia),
              AllOf(HasSubstr("demo/chat: no decision to explain yet"),
                    HasSubstr("Ready=False (InvalidSpec): spec.variants[0]."
                              "gpuClass: no GPUClass h900")));
  EXPECT_TRUE(ExplainJson(ia)["economics"].is_null());
}

// A status whose fields have the wrong types (an older or foreign writer)
// is explained with what can be read, never an exception.
TEST(ExplainTest, WronglyTypedFieldsAreReadAsMissing) {
  json ia = Decided(false);
  ia["status"]["economics"]["costPerHour"] = "expensive";
  ia["status"]["economics"]["tiers"] = "none";
  ia["status"]["replicas"] = 3;
  ia["status"]["conditions"] = {{{"type", 1}, {"status", true}}};
  std::string text;
  ASSERT_NO_THROW(text = ExplainText(ia));
  EXPECT_THAT(text, HasSubstr("on-demand 0/0, spot 0/0"));
  EXPECT_THAT(text, HasSubstr("$0.0000/h; always-on"));
  ASSERT_NO_THROW(ExplainJson(ia));
}

// How much of its own traffic backs the endpoint, and what restarted it.
TEST(ExplainTest, TrafficHistoryRecorded) {
  json ia = Decided(false);
  EXPECT_THAT(ExplainText(ia), Not(HasSubstr("Traffic recorded")));
  ia["status"]["trafficHistory"] = {
      {"seconds", 2520}, {"since", "2026-12-03T05:18:00Z"},
      {"requests", 812}, {"gaps", 0},
      {"clockJumps", 0}, {"bytes", 900}};
  EXPECT_THAT(ExplainText(ia),
              AllOf(HasSubstr("Traffic recorded: 42 min of unbroken history, "
                              "812 request(s) since 2026-12-03T05:18:00Z\n"),
                    Not(HasSubstr("restarted"))));
  ia["status"]["trafficHistory"]["seconds"] = 9000;
  ia["status"]["trafficHistory"]["gaps"] = 2;
  EXPECT_THAT(ExplainText(ia),
              HasSubstr("2.5 h of unbroken history, 812 request(s) since "
                        "2026-12-03T05:18:00Z (restarted by 2 gap(s) without "
                        "arrival figures, 0 clock jump(s))"));
  EXPECT_EQ(ExplainJson(ia)["trafficHistory"]["requests"], 812);
}

// The endpoint's own traffic replayed through other policies: the table,
// and the cheapest at least as good as what runs (the controller's
// status.counterfactual.cheaper) -- or that none is.
TEST(ExplainTest, CounterfactualInDollars) {
  json ia = Decided(false);
  ia["status"]["counterfactual"] = json::parse(R"({
    "time": "2026-12-03T06:00:00Z", "windowSeconds": 7200,
    "warmupSeconds": 3600, "requests": 1084, "note": "",
    "candidates": [
      {"policy": "pilotlight", "setting": 1, "name": "pilotlight at 1",
       "costPerHour": 3.4328, "sloAttainment": 0.995,
       "coldStartFraction": 0.004, "replayedAsItRuns": true, "running": true},
      {"policy": "keepalive-10m", "setting": 5, "name": "keep-alive 5 min",
       "costPerHour": 2.1, "sloAttainment": 0.996, "coldStartFraction": 0.004,
       "replayedAsItRuns": true, "running": false},
      {"policy": "keepalive-10m", "setting": 60, "name": "keep-alive 60 min",
       "costPerHour": 1.0, "sloAttainment": 1, "coldStartFraction": 0,
       "replayedAsItRuns": false, "running": false}],
    "cheaper": {"policy": "keepalive-10m", "setting": 5,
                "name": "keep-alive 5 min", "costPerHour": 2.1,
                "saving": 0.3883}})");
  const std::string text = ExplainText(ia);
  EXPECT_THAT(text, HasSubstr("Counterfactual: the last 60 min of this "
                              "endpoint's traffic (to 2026-12-03T06:00:00Z; "
                              "1084 requests measured after a 60 min "
                              "warm-up)"));
  EXPECT_THAT(text, HasSubstr("* pilotlight at 1"));
  EXPECT_THAT(text, HasSubstr("~ keep-alive 60 min"));
  EXPECT_THAT(text, HasSubstr("keep-alive 5 min would have cost $2.1000/h "
                              "at the same attainment and cold share or "
                              "better, against $3.4328/h running (39% "
                              "less)"));
  ia["status"]["counterfactual"]["cheaper"] = nullptr;
  EXPECT_THAT(ExplainText(ia),
              HasSubstr("No policy replayed was cheaper at pilotlight at 1's "
                        "attainment and cold share or better."));
  ia["status"]["counterfactual"] = {
      {"candidates", json::array()},
      {"note", "10 min of unbroken history; a replay needs 30 min"}};
  EXPECT_THAT(ExplainText(ia),
              HasSubstr("Counterfactual: 10 min of unbroken history; a "
                        "replay needs 30 min\n"));
  EXPECT_EQ(ExplainJson(ia)["counterfactual"]["note"],
            "10 min of unbroken history; a replay needs 30 min");
}

// With a sleep pool: its engines, the wake against the cold start, and
// an engine's price asleep; without one, nothing about it.
TEST(ExplainTest, SleepPoolEnginesAndTheirWake) {
  json ia = Decided(false);
  EXPECT_THAT(ExplainText(ia), Not(HasSubstr("Sleep pool")));
  ia["status"]["sleepPool"] = {{"deployment", "pool-a100"},
                               {"awake", 1},
                               {"asleep", 2},
                               {"wakeSeconds", 1.13},
                               {"asleepCostPerHour", 0.49},
                               {"pods", 2},
                               {"podsWithAnEngineAwake", 1}};
  EXPECT_THAT(ExplainText(ia),
              HasSubstr("Sleep pool pool-a100: 1 engine(s) awake, 2 asleep. "
                        "A wake takes 1.13 s against a cold start's 60 s "
                        "lead; an engine asleep costs $0.4900/h"));
  EXPECT_THAT(ExplainText(ia),
              HasSubstr("1 of the pool's 2 Ready pod(s) have an engine awake "
                        "(any endpoint's).\n"));
  EXPECT_EQ(ExplainJson(ia)["sleepPool"]["asleep"], 2);
  // No pod free: a wake must make room first.
  ia["status"]["sleepPool"]["podsWithAnEngineAwake"] = 2;
  EXPECT_THAT(ExplainText(ia),
              HasSubstr("2 of the pool's 2 Ready pod(s) have an engine awake "
                        "(any endpoint's): none is free, so a wake first puts "
                        "an idle engine to sleep"));
  EXPECT_THAT(ExplainText(ia), Not(HasSubstr("sizes the pool")));
  // Sized by Pilotlight (pilotlight.dev/max-pool-pods on the pool).
  ia["status"]["sleepPool"]["sizedTo"] = {
      {"pods", 3}, {"reason", "3 pod(s): 2 busy + 1 spare"}};
  EXPECT_THAT(ExplainText(ia),
              HasSubstr("  Pilotlight sizes the pool to 3 pod(s): 2 busy + 1 "
                        "spare.\n"));
}

TEST(ExplainTest, JsonCarriesTheFacts) {
  const json j = ExplainJson(Decided(false));
  EXPECT_EQ(j["endpoint"], "demo/chat");
  EXPECT_EQ(j["tier"], "a100-80gb-on-demand");
  EXPECT_EQ(j["economics"]["breakEvenSeconds"], 120);
  EXPECT_EQ(j["lastDecision"]["reason"], "WarmPool");
}

}  // namespace
}  // namespace pilotlight::api
