// The pool rule (PlanPool), table-driven, and PoolEngines with a fake
// engine client: what it sees of the engines and the actions it runs.
#include "controller/runtime/pool_engines.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

TEST(PlanPoolTest, EnginesAreTheFirstReplicasFromZero) {
  struct Row {
    const char* what;
    std::vector<int32_t> decided, replicas;
    int32_t own_ready;
    std::vector<std::string> awake, asleep;
    // Expected:
    std::vector<int32_t> own;
    std::vector<std::string> sleep;
    int32_t serving;
  };
  // clang-format off
  const std::vector<Row> rows = {
      {"at zero, one replica asked: none of its own (the activator wakes "
       "the engine for its request)",
       {1}, {0}, 0, {}, {"p1:8001"}, {0}, {}, 1},
      {"at zero, awake already: nothing to do",
       {1}, {0}, 0, {"p1:8001"}, {}, {0}, {}, 1},
      {"at zero, idle past the grace: the awake one sleeps",
       {0}, {0}, 0, {"p1:8001"}, {}, {0}, {"p1:8001"}, 0},
      {"at zero, two of two engines (one awake)",
       {2}, {0}, 0, {"p1:8001"}, {"p2:8001"}, {0}, {}, 2},
      {"at zero, one of two awake: the other sleeps",
       {1}, {0}, 0, {"p1:8001", "p2:8001"}, {}, {0}, {"p2:8001"}, 1},
      {"at zero, more than the engines: its own as decided, the awake one "
       "serves meanwhile",
       {3}, {0}, 0, {"p1:8001"}, {}, {3}, {}, 1},
      {"at zero, a replica on another variant: its own",
       {0, 1}, {0, 0}, 0, {}, {"p1:8001"}, {0, 1}, {}, 0},
      {"its own starting, none Ready: the engine serves",
       {3}, {3}, 0, {"p1:8001"}, {}, {3}, {}, 1},
      {"its own Ready: the engine sleeps",
       {3}, {3}, 1, {"p1:8001"}, {}, {3}, {"p1:8001"}, 0},
      {"its own going to zero, an engine asleep: left asleep",
       {0}, {2}, 2, {}, {"p1:8001"}, {0}, {}, 0},
  };
  // clang-format on
  for (const Row& r : rows) {
    const PoolPlan p =
        PlanPool(r.decided, r.replicas, r.own_ready, r.awake, r.asleep);
    EXPECT_THAT(p.own, ElementsAreArray(r.own)) << r.what;
    EXPECT_THAT(p.sleep, ElementsAreArray(r.sleep)) << r.what;
    EXPECT_EQ(p.engines_serving, r.serving) << r.what;
  }
}

// An engine per address: asleep, awake, or no sleep mode (absent).
class FakeEngines : public EngineClient {
 public:
  std::optional<bool> IsSleeping(const std::string& a) override {
    ++probes;
    auto it = asleep.find(a);
    return it == asleep.end() ? std::nullopt : std::optional<bool>(it->second);
  }
  absl::Status Sleep(const std::string& a) override {
    calls.push_back(a);
    if (refuse) {
      return absl::FailedPreconditionError("507: no room in host memory");
    }
    asleep[a] = true;
    return absl::OkStatus();
  }
  std::map<std::string, bool> asleep;
  std::vector<std::string> calls;
  int probes = 0;
  bool refuse = false;
};

TEST(PoolEnginesTest, SeesTheEnginesLookedAtAndPutsThemToSleepOffThread) {
  FakeEngines fake;
  fake.asleep = {{"p1:8001", true}, {"p2:8001", false}, {"p4:8001", false}};
  std::vector<std::string> done;
  PoolEngines engines(fake, [&](const std::string& a, const absl::Status& st) {
    done.push_back(a + (st.ok() ? "" : " failed"));
  });
  using S = PoolEngines::State;
  // Unknown until a pass has probed them; p3 has no sleep mode.
  EXPECT_THAT(engines.Look("ml/chat", {"p1:8001", "p2:8001", "p3:8001"}),
              ElementsAre(S::kUnknown, S::kUnknown, S::kUnknown));
  engines.RunOnce();
  EXPECT_EQ(fake.probes, 3);
  EXPECT_THAT(engines.Look("ml/chat", {"p1:8001", "p2:8001", "p3:8001"}),
              ElementsAre(S::kAsleep, S::kAwake, S::kUnknown));
  // p2 has an engine awake; p1's is asleep and p3's unknown (not p3x's).
  EXPECT_THAT(engines.AnEngineAwakeOn({"p1", "p2", "p3", "p"}),
              ElementsAre(false, true, false, false));
  // Asked twice before a pass: done once; its state follows at once.
  engines.Sleep("p2:8001");
  engines.Sleep("p2:8001");
  EXPECT_THAT(fake.calls, IsEmpty()) << "off the caller's thread";
  engines.RunOnce();
  EXPECT_THAT(fake.calls, ElementsAre("p2:8001"));
  EXPECT_THAT(done, ElementsAre("p2:8001"));
  EXPECT_THAT(engines.Look("ml/chat", {"p1:8001", "p2:8001"}),
              ElementsAre(S::kAsleep, S::kAsleep));
  // A refused sleep is reported and changes nothing seen.
  fake.refuse = true;
  engines.Look("ml/code", {"p4:8001"});
  engines.RunOnce();
  // Another endpoint's engine awake takes its pod too.
  EXPECT_THAT(engines.AnEngineAwakeOn({"p1", "p2", "p4"}),
              ElementsAre(false, false, true));
  engines.Sleep("p4:8001");
  engines.RunOnce();
  EXPECT_EQ(done.back(), "p4:8001 failed");
  EXPECT_THAT(engines.Look("ml/code", {"p4:8001"}), ElementsAre(S::kAwake));
  // Forgotten endpoints' engines are probed no more.
  engines.Forget("ml/chat");
  engines.Forget("ml/code");
  fake.probes = 0;
  engines.RunOnce();
  EXPECT_EQ(fake.probes, 0);
}

}  // namespace
}  // namespace pilotlight::runtime
