#include "controller/model/calibration.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::model {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

struct Fixture {
  ModelProfile model = *FindPreset("llama-3.1-8b");
  GpuClass gpu = *Catalog::Default()->Find("a100-80gb");
  EngineTuning tuning;
  Workload workload{.context_tokens = 4096,
                    .prompt_tokens = 1024,
                    .output_tokens = 256,
                    .concurrency = 1};
  ReplicaModel replica{model, gpu, 1, Precision::kBf16, Precision::kBf16,
                       tuning};

  // What a server `slower` times slower than the model would report.
  LatencySample Window(int minute, double slower, double batch = 8,
                       double tokens = 500, double requests = 20) const {
    LatencySample s;
    s.at = kT0 + absl::Minutes(minute);
    s.batch = batch;
    s.itl_s = slower * replica.TpotSeconds(static_cast<int>(batch), workload);
    s.itl_count = tokens;
    s.prompt_tokens = 1024;
    s.ttft_s = slower * replica.TtftSeconds(1024);
    s.ttft_count = requests;
    return s;
  }
};

// Table-driven, explicit times: a server 1.5x slower than the model is
// learned once enough tokens are held; before that the model stands.
TEST(CalibratorTest, LearnsTheServersFactorAfterEnoughSamples) {
  const Fixture f;
  Calibrator c;
  struct Step {
    int minute;
    CalibrationState decode;
    double scale;
  };
  // 500 tokens a window, 2,000 needed: four windows a minute apart hold
  // just under 2,000 (the older ones decayed by 2^(-1/30) a minute), so
  // calibrated from the fifth.
  const Step steps[] = {
      {0, CalibrationState::kUncalibrated, 1.0},
      {1, CalibrationState::kUncalibrated, 1.0},
      {2, CalibrationState::kUncalibrated, 1.0},
      {3, CalibrationState::kUncalibrated, 1.0},
      {4, CalibrationState::kCalibrated, 1.5},
      {5, CalibrationState::kCalibrated, 1.5},
  };
  for (const Step& s : steps) {
    ASSERT_TRUE(c.Add(f.Window(s.minute, 1.5), f.replica, f.workload).ok());
    EXPECT_EQ(c.decode().state, s.decode) << "minute " << s.minute;
    EXPECT_NEAR(c.decode().scale, s.scale, 1e-9) << "minute " << s.minute;
  }
  // Prefill: 20 requests a window, 50 needed: calibrated from the third.
  EXPECT_EQ(c.prefill().state, CalibrationState::kCalibrated);
  EXPECT_NEAR(c.prefill().scale, 1.5, 1e-9);
  EngineTuning t;
  c.Apply(t);
  EXPECT_NEAR(t.decode_time_scale, 1.5, 1e-9);
  EXPECT_NEAR(t.prefill_time_scale, 1.5, 1e-9);
  EXPECT_THAT(c.Describe(), HasSubstr("decode 1.50x predicted"));
}

// The calibrated capacity follows the server: at the TPOT SLO a replica
// 1.5x slower holds fewer sequences, within 10 % of what the slower
// server's own curve gives.
TEST(CalibratorTest, CapacityFollowsTheCalibration) {
  const Fixture f;
  Calibrator c;
  for (int m = 0; m < 10; ++m) {
    ASSERT_TRUE(c.Add(f.Window(m, 1.5), f.replica, f.workload).ok());
  }
  EngineTuning t = f.tuning;
  c.Apply(t);
  const ReplicaModel calibrated(f.model, f.gpu, 1, Precision::kBf16,
                                Precision::kBf16, t);
  const double slo = 0.040;
  const int before = f.replica.MaxConcurrency(f.workload, slo);
  const int after = calibrated.MaxConcurrency(f.workload, slo);
  // The slower server's truth: the largest batch whose 1.5x TPOT meets it.
  int truth = 0;
  for (int b = 1; b <= before; ++b) {
    if (1.5 * f.replica.TpotSeconds(b, f.workload) <= slo) {
      truth = b;
    }
  }
  EXPECT_LT(after, before);
  EXPECT_GT(truth, 0);
  EXPECT_NEAR(after, truth, 0.1 * truth);
}

// Old evidence decays: after the server changes (a new engine version, say),
// the factor moves to the new one within a few half-lives.
TEST(CalibratorTest, DecaysTowardsTheNewFactor) {
  const Fixture f;
  Calibrator c;
  for (int m = 0; m < 10; ++m) {
    ASSERT_TRUE(c.Add(f.Window(m, 1.5), f.replica, f.workload).ok());
  }
  for (int m = 10; m < 10 + 150; m += 5) {  // 2.5 h of 0.8x windows
    ASSERT_TRUE(c.Add(f.Window(m, 0.8), f.replica, f.workload).ok());
  }
  EXPECT_NEAR(c.decode().scale, 0.8, 0.02);
}

// Nonsense is rejected, counted and named; it never moves the factor.
TEST(CalibratorTest, RejectsNonsenseSamples) {
  const Fixture f;
  Calibrator c;
  for (int m = 0; m < 5; ++m) {
    ASSERT_TRUE(c.Add(f.Window(m, 1.2), f.replica, f.workload).ok());
  }
  const double before = c.decode().scale;
  struct Bad {
    LatencySample s;
    const char* expect;
  };
  LatencySample zero = f.Window(6, 1.2);
  zero.itl_s = 0;
  LatencySample nan = f.Window(6, 1.2);
  nan.itl_s = std::nan("");
  LatencySample huge = f.Window(6, 50);
  LatencySample negative = f.Window(6, 1.2);
  negative.itl_count = -3;
  const Bad bad[] = {
      {zero, "is not a positive figure"},
      {nan, "is not a positive figure"},
      {huge, "50x the model's"},
      {negative, "inter-token count is not finite"},
  };
  for (const Bad& b : bad) {
    absl::Status s = c.Add(b.s, f.replica, f.workload);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr(b.expect));
  }
  EXPECT_EQ(c.rejected(), 4);
  EXPECT_DOUBLE_EQ(c.decode().scale, before);
  EXPECT_THAT(c.Describe(), HasSubstr("4 samples rejected"));
}

// The halves stand alone: a TTFT twenty times off (a test server whose
// clock runs faster, say) is refused while its inter-token figure counts.
TEST(CalibratorTest, ANonsenseHalfDoesNotDropTheOther) {
  const Fixture f;
  Calibrator c;
  for (int m = 0; m < 6; ++m) {
    LatencySample s = f.Window(m, 1.3);
    s.ttft_s /= 20;
    EXPECT_FALSE(c.Add(s, f.replica, f.workload).ok());
  }
  EXPECT_EQ(c.decode().state, CalibrationState::kCalibrated);
  EXPECT_NEAR(c.decode().scale, 1.3, 1e-9);
  EXPECT_DOUBLE_EQ(c.prefill().weight, 0);
  EXPECT_THAT(c.last_rejection(), HasSubstr("time to first token"));
}

// A factor beyond the bounds is clamped, and the status says so; a queue
// keeps TTFT out of the prefill factor (vLLM's TTFT includes the wait).
TEST(CalibratorTest, ClampsAndSkipsQueuedTtft) {
  const Fixture f;
  Calibrator c;
  for (int m = 0; m < 5; ++m) {
    LatencySample s = f.Window(m, 3.0);
    s.waiting = 4;
    ASSERT_TRUE(c.Add(s, f.replica, f.workload).ok());
  }
  EXPECT_NEAR(c.decode().raw, 3.0, 1e-9);
  EXPECT_NEAR(c.decode().scale, 2.0, 1e-9);
  EXPECT_EQ(c.prefill().state, CalibrationState::kUncalibrated);
  EXPECT_DOUBLE_EQ(c.prefill().weight, 0);
  EXPECT_THAT(c.Describe(), HasSubstr("clamped from 3.00x"));
  EXPECT_THAT(c.Describe(), HasSubstr("prefill uncalibrated (0 of 50"));
}

TEST(CalibratorTest, ParseSavedCalibration) {
  absl::StatusOr<std::vector<SavedCalibration>> ok = ParseCalibration(
      "kind: SizingCalibration\ncalibrations:\n"
      "- {model: llama-3.1-8b, gpuClass: l4, decodeScale: 1.25}\n",
      "c.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].gpu_class, "l4");
  EXPECT_DOUBLE_EQ((*ok)[0].decode_scale, 1.25);
  EXPECT_DOUBLE_EQ((*ok)[0].prefill_scale, 1.0);
  struct Bad {
    const char* yaml;
    const char* expect;
  };
  const Bad bad[] = {
      {"[1", "not valid YAML"},
      {"kind: SizingCalibration\n", "\"calibrations\" list"},
      {"calibrations:\n- {gpuClass: l4}\n", "calibrations[0]: needs"},
      {"calibrations:\n- {model: m, gpuClass: l4, decodeScale: 0}\n",
       "out of range"},
      {"calibrations:\n- {model: m, gpuClass: l4, decodeScale: fast}\n",
       "malformed entry"},
  };
  for (const Bad& b : bad) {
    absl::StatusOr<std::vector<SavedCalibration>> r =
        ParseCalibration(b.yaml, "c.yaml");
    ASSERT_FALSE(r.ok()) << b.yaml;
    EXPECT_THAT(r.status().message(), HasSubstr(b.expect)) << b.yaml;
  }
}

}  // namespace
}  // namespace pilotlight::model
