#include "controller/sim/retuned_policy.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/sim/one_variant_config.h"

namespace pilotlight::sim {
namespace {

// Bursts of `n` requests every `period` seconds for `hours`, plus a
// Poisson trickle; from `change_at` on, bursts twice as large.
EndpointTrace Bursty(double hours, double period, int n, double change_at,
                     uint64_t seed) {
  EndpointTrace e;
  e.name = "e";
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(1.0 / 60);
  for (double t = gap(rng); t < hours * 3600; t += gap(rng)) {
    e.requests.push_back({t, 1000, 200, -1});
  }
  for (double t = 30; t < hours * 3600; t += period) {
    const int burst = t >= change_at ? 2 * n : n;
    for (int k = 0; k < burst; ++k) {
      e.requests.push_back({t + 0.05 * k, 1000, 200, -1});
    }
  }
  std::sort(e.requests.begin(), e.requests.end(),
            [](const Request& a, const Request& b) {
              return a.arrival_s < b.arrival_s;
            });
  return e;
}

class RetunedPolicyTest : public ::testing::Test {
 protected:
  RetunedPolicyTest()
      : catalog_(*model::Catalog::Default()),
        config_(OneVariantConfig(catalog_)) {
    config_.cold_start = absl::Seconds(40);
    models_ = *BuildServiceModels(config_, false);
  }

  // Every request as served, by `policy` on `e`.
  std::vector<RequestRecord> Serve(const std::string& policy,
                                   const EndpointTrace& e, double duration,
                                   std::optional<double> knob = {}) {
    std::vector<RequestRecord> served;
    SimConfig c = config_;
    c.request_log = [&](const RequestRecord& r) { served.push_back(r); };
    PolicyContext ctx{&c, &models_, &e, false, knob};
    ScalingPolicyPtr p = *MakePolicy(policy, ctx);
    SimulateEndpoint(e, duration, c, models_, *p);
    std::sort(served.begin(), served.end(),
              [](const RequestRecord& a, const RequestRecord& b) {
                return a.arrival_s < b.arrival_s;
              });
    return served;
  }

  model::Catalog catalog_;
  SimConfig config_;
  std::vector<ServiceModel> models_;
};

// Only the past is replayed: two traces the same until t and different
// after give the same outcome to every request done before t.
TEST_F(RetunedPolicyTest, ATraceChangedAfterTChangesNothingBeforeT) {
  const double t = 2.5 * 3600;
  const EndpointTrace same = Bursty(4, 900, 20, 1e18, 7);
  const EndpointTrace changed = Bursty(4, 900, 20, t, 7);
  const double duration = 4 * 3600;
  const std::vector<RequestRecord> a =
      Serve("pilotlight-retuned", same, duration);
  const std::vector<RequestRecord> b =
      Serve("pilotlight-retuned", changed, duration);
  int compared = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].done_s >= t || b[i].done_s >= t) {
      break;
    }
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].start_s, b[i].start_s) << "request " << i;
    EXPECT_EQ(a[i].cold, b[i].cold) << "request " << i;
    ++compared;
  }
  EXPECT_GT(compared, 100);
  // And the traces do differ after t, in what was served.
  EXPECT_NE(a.size(), b.size());
}

// With less history than min_history it follows its first candidate,
// pilotlight at its default target utilisation: the same service.
TEST_F(RetunedPolicyTest, TooLittleHistoryFollowsPilotlightsDefaults) {
  const EndpointTrace e = Bursty(0.4, 300, 10, 1e18, 3);
  const double duration = 0.4 * 3600;
  const std::vector<RequestRecord> retuned =
      Serve("pilotlight-retuned", e, duration);
  const std::vector<RequestRecord> plain =
      Serve("pilotlight", e, duration, 1.0);
  ASSERT_EQ(retuned.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(retuned[i].start_s, plain[i].start_s) << "request " << i;
    EXPECT_EQ(retuned[i].cold, plain[i].cold) << "request " << i;
  }
}

// Runs `policy` and, from its first tick at or after `at`, a copy of it
// in its place (the original destroyed): what the retuner resumes replays
// from.
class SwappedForItsCopy final : public ScalingPolicy {
 public:
  SwappedForItsCopy(ScalingPolicyPtr policy, absl::Time at)
      : policy_(std::move(policy)), at_(at) {}
  std::string name() const override { return policy_->name(); }
  std::vector<int> Tick(const Observation& o) override {
    if (!swapped_ && o.now >= at_) {
      ScalingPolicyPtr copy = policy_->Clone();
      EXPECT_NE(copy, nullptr) << policy_->name();
      if (copy) {
        policy_ = std::move(copy);
      }
      swapped_ = true;
    }
    return policy_->Tick(o);
  }
  absl::Time QuietUntil() const override {
    return swapped_ ? policy_->QuietUntil()
                    : std::min(at_, policy_->QuietUntil());
  }
  void SkipQuiet(absl::Time first, absl::Duration step, int64_t n) override {
    policy_->SkipQuiet(first, step, n);
  }
  bool RemoveByPaidTime() const override { return policy_->RemoveByPaidTime(); }
  bool WantsRequestSizes() const override {
    return policy_->WantsRequestSizes();
  }
  bool swapped() const { return swapped_; }

 private:
  ScalingPolicyPtr policy_;
  const absl::Time at_;
  bool swapped_ = false;
};

// A copy carries on as the original would have: every request served the
// same, though the original is gone.
TEST_F(RetunedPolicyTest, ACopyCarriesOnAsTheOriginal) {
  const EndpointTrace e = Bursty(3, 700, 15, 1e18, 11);
  const double duration = 3 * 3600;
  for (const std::string policy :
       {"pilotlight", "knative", "keda", "keepalive-10m"}) {
    const std::vector<RequestRecord> plain = Serve(policy, e, duration);
    std::vector<RequestRecord> copied;
    SimConfig c = config_;
    c.request_log = [&](const RequestRecord& r) { copied.push_back(r); };
    PolicyContext ctx{&c, &models_, &e, false, std::nullopt};
    SwappedForItsCopy p(*MakePolicy(policy, ctx),
                        c.epoch + absl::Seconds(1.5 * 3600 + 1));
    SimulateEndpoint(e, duration, c, models_, p);
    EXPECT_TRUE(p.swapped()) << policy;
    std::sort(copied.begin(), copied.end(),
              [](const RequestRecord& a, const RequestRecord& b) {
                return a.arrival_s < b.arrival_s;
              });
    ASSERT_EQ(copied.size(), plain.size()) << policy;
    int cold = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(copied[i].start_s, plain[i].start_s)
          << policy << " request " << i;
      EXPECT_EQ(copied[i].cold, plain[i].cold) << policy << " request " << i;
      cold += plain[i].cold ? 1 : 0;
    }
    EXPECT_GT(cold, 0) << policy;  // it scaled to zero and back
  }
}

TEST_F(RetunedPolicyTest, BadCandidatesAreRefused) {
  const EndpointTrace e = Bursty(0.1, 300, 1, 1e18, 1);
  PolicyContext ctx{&config_, &models_, &e, false, std::nullopt};
  EXPECT_FALSE(MakeRetunedPolicy(ctx, {}).ok());
  RetuneOptions o;
  o.candidates = {{"hybrid-histogram", 1}};  // no knob to set
  EXPECT_FALSE(MakeRetunedPolicy(ctx, o).ok());
}

}  // namespace
}  // namespace pilotlight::sim
