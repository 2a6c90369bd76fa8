// DecisionRecord: one JSON line per decision, with what it was made on.
#include "controller/policy/decision_record.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pilotlight::policy {
namespace {

TEST(DecisionRecordTest, EverythingTheDeciderSawAsOneJsonLine) {
  const absl::Time origin = absl::FromUnixSeconds(1'700'000'000);
  DemandSample a;
  a.at = origin + absl::Milliseconds(1500);
  a.in_flight = 3;
  a.queued = 12.5;
  DemandSample b;
  b.at = origin + absl::Seconds(2);
  b.arrivals = 4;
  b.partial = true;
  const std::vector<DemandSample> samples = {a, b};
  Snapshot s;
  s.demand = samples;
  VariantState v;
  v.desired = 1;
  v.ready = 1;
  v.starting = {origin};
  v.cold_start = {
      .samples = 4, .p50 = absl::Seconds(9), .p90 = absl::Milliseconds(10250)};
  v.node_free = false;
  s.variants = {v};
  Decision d;
  d.reason = ScaleReason::kPanic;
  d.message = "Panic: \"quoted\"\n";
  VariantDecision m;
  m.deployment = "m";
  m.replicas = 3;
  d.variants.push_back(m);

  const std::string line =
      DecisionRecord("ns/e", s, d, origin + absl::Seconds(2), origin);
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_DOUBLE_EQ(j["t"].get<double>(), 2.0);
  EXPECT_EQ(j["endpoint"], "ns/e");
  ASSERT_EQ(j["samples"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["samples"][0]["at"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["samples"][0]["in_flight"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(j["samples"][0]["queued"].get<double>(), 12.5);
  EXPECT_TRUE(j["samples"][0]["arrivals"].is_null());
  EXPECT_TRUE(j["samples"][1]["in_flight"].is_null());
  EXPECT_DOUBLE_EQ(j["samples"][1]["arrivals"].get<double>(), 4);
  EXPECT_TRUE(j["samples"][1]["partial"].get<bool>());
  ASSERT_EQ(j["variants"].size(), 1u);
  EXPECT_EQ(j["variants"][0]["desired"], 1);
  EXPECT_EQ(j["variants"][0]["starting"], 1);
  EXPECT_DOUBLE_EQ(j["variants"][0]["cold_start_p90_s"].get<double>(), 10.25);
  EXPECT_EQ(j["variants"][0]["cold_start_samples"], 4);
  EXPECT_FALSE(j["variants"][0]["node_free"].get<bool>());
  EXPECT_EQ(j["replicas"], nlohmann::json::array({3}));
  EXPECT_EQ(j["reason"], "Panic");
  EXPECT_EQ(j["message"], "Panic: \"quoted\"\n");
}

}  // namespace
}  // namespace pilotlight::policy
