// Holds the knative baseline's decider to Knative's own unit-test cases
// (knative/serving pkg/autoscaler/scaling/autoscaler_test.go @ 98e5ef90,
// transcribed as data in testdata/knative-cases.json; its "conventions"
// field says how to drive them).
#include "controller/policy/knative_kpa.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pilotlight::policy {
namespace {

absl::Time At(double t) { return absl::UnixEpoch() + absl::Seconds(t); }

KpaSpec SpecFrom(const nlohmann::json& j) {
  KpaSpec s;
  s.target_value = j["target_value"];
  s.total_value = j["total_value"];
  s.target_burst_capacity = j["target_burst_capacity"];
  s.panic_threshold = j["panic_threshold"];
  s.max_scale_up_rate = j["max_scale_up_rate"];
  s.max_scale_down_rate = j["max_scale_down_rate"];
  s.stable_window = absl::Seconds(j["stable_window_s"].get<double>());
  s.scale_down_delay = absl::Seconds(j["scale_down_delay_s"].get<double>());
  s.reachable = j["reachable"];
  s.activation_scale = j["activation_scale"];
  return s;
}

std::optional<double> Opt(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<double>(j.get<double>());
}

TEST(KnativeKpaTest, PassesKnativeDeciderCases) {
  std::ifstream in("tests/policy/testdata/knative-cases.json");
  ASSERT_TRUE(in) << "run from the source root";
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json all = nlohmann::json::parse(text.str());
  int steps = 0;
  for (const nlohmann::json& c : all["decider_cases"]) {
    const std::string name = c["name"];
    // newAutoscaler reads time.Now() first: t = 1000 in the transcription.
    KpaDecider d(SpecFrom(c["spec"]), c["initial_ready"], At(1000));
    for (const nlohmann::json& s : c["steps"]) {
      const double t = s["t"];
      const std::string where = name + " @ t=" + std::to_string(t);
      if (s.contains("spec_update")) {
        d.Update(SpecFrom(s["spec_update"]));
      }
      if (s.contains("set_panic")) {
        d.SetPanicForTest(At(s["set_panic"]["panic_time"].get<double>()),
                          s["set_panic"]["max_panic_pods"]);
      }
      const std::optional<double> ready = Opt(s["ready"]);
      const KpaResult r =
          d.Scale(At(t), Opt(s["stable"]), Opt(s["panic"]),
                  ready ? std::optional<int32_t>(static_cast<int32_t>(*ready))
                        : std::nullopt);
      ++steps;
      if (s.contains("want_valid")) {
        EXPECT_EQ(r.valid, s["want_valid"].get<bool>()) << where;
      }
      EXPECT_EQ(r.desired, s["want"].get<int>()) << where;
      if (s.contains("ebc")) {
        EXPECT_EQ(r.excess_burst_capacity, s["ebc"].get<int>()) << where;
      } else if (s.contains("ebc_args")) {
        // expectedEBC(totCap, tbc, conc, pods) with targetUtilization 0.75,
        // compared within 1 as the Go test's approxEquateInt32 does.
        const auto& a = s["ebc_args"];
        const double want =
            std::floor(a[0].get<double>() / 0.75 * a[3].get<double>() -
                       a[1].get<double>() - a[2].get<double>());
        EXPECT_NEAR(r.excess_burst_capacity, want, 1) << where;
      }
      if (s.contains("want_panic_time")) {
        if (s["want_panic_time"].is_null()) {
          EXPECT_FALSE(d.panic_time().has_value()) << where;
        } else {
          ASSERT_TRUE(d.panic_time().has_value()) << where;
          EXPECT_EQ(*d.panic_time(), At(s["want_panic_time"].get<double>()))
              << where;
        }
      }
      if (s.contains("want_panic")) {
        EXPECT_EQ(d.panic_time().has_value(), s["want_panic"].get<bool>())
            << where;
      }
    }
  }
  EXPECT_EQ(steps, 59);
}

// The scale-to-zero reconciler against the scaler cases
// (pkg/reconciler/autoscaling/kpa/scaler_test.go @ 98e5ef90).
TEST(KnativeKpaTest, PassesKnativeScalerCases) {
  std::ifstream in("tests/policy/testdata/knative-cases.json");
  ASSERT_TRUE(in) << "run from the source root";
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json all = nlohmann::json::parse(text.str());
  int cases = 0;
  for (const nlohmann::json& c : all["scaler_cases"]) {
    const nlohmann::json& cfg = c["config"];
    KpaScalerConfig k;
    k.enable_scale_to_zero = cfg["enable_scale_to_zero"];
    k.stable_window = absl::Seconds(cfg["stable_window_s"].get<double>());
    k.grace_period =
        absl::Seconds(cfg["scale_to_zero_grace_period_s"].get<double>());
    k.last_pod_retention = absl::Seconds(
        cfg["scale_to_zero_pod_retention_period_s"].get<double>());
    k.progress_deadline =
        absl::Seconds(cfg["progress_deadline_s"].get<double>());
    k.target_burst_capacity = cfg["target_burst_capacity"];
    k.min_scale = cfg["min_scale"];
    k.max_scale = cfg["max_scale"];
    k.initial_scale = cfg.contains("initial_scale_annotation")
                          ? cfg["initial_scale_annotation"].get<int32_t>()
                          : cfg["initial_scale"].get<int32_t>();
    k.reachable = cfg.value("reachable", true);
    PaStatus pa;
    const std::string active = c["pa"]["active"];
    pa.active = active == "true"    ? PaActive::kTrue
                : active == "false" ? PaActive::kFalse
                                    : PaActive::kUnknown;
    pa.active_for = absl::Seconds(c["pa"]["for_s"].get<double>());
    pa.scale_target_initialized = c["pa"]["initialized"];
    std::optional<absl::Duration> sks;
    if (!c["sks_proxy_for_s"].is_null()) {
      sks = absl::Seconds(c["sks_proxy_for_s"].get<double>());
    }
    const KpaScaleResult r =
        KpaScale(k, pa, c["start_replicas"], c["scale_to"], sks, c["probe_ok"]);
    const std::string label = c["label"];
    EXPECT_EQ(r.replicas, c["want_replicas"].get<int>()) << label;
    EXPECT_EQ(r.patch, c["want_scaling"].get<bool>()) << label;
    ++cases;
  }
  EXPECT_EQ(cases, 36);
}

}  // namespace
}  // namespace pilotlight::policy
