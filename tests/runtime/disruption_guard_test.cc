// Table tests of which pods carry the guard against node autoscalers'
// consolidation, with explicit times.
#include "controller/runtime/disruption_guard.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pilotlight::runtime {
namespace {

using json = nlohmann::json;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

// A pod named `name`, Ready since `ready_for` before kNow (negative: not
// Ready), with these annotations.
json Pod(const std::string& name, absl::Duration ready_for,
         json annotations = json::object()) {
  json pod = {{"metadata", {{"name", name}, {"annotations", annotations}}},
              {"status", {{"phase", "Running"}}}};
  if (ready_for >= absl::ZeroDuration()) {
    pod["status"]["conditions"] = {
        {{"type", "Ready"},
         {"status", "True"},
         {"lastTransitionTime", Rfc3339(kNow - ready_for)}}};
  } else {
    pod["status"]["phase"] = "Pending";
  }
  return pod;
}

TEST(DisruptionGuardTest, WhichPodsAreGuardedAndUnguarded) {
  const json ours = {{kDoNotDisrupt, "true"},
                     {kSafeToEvict, "false"},
                     {kDisruptionGuard, "true"}};
  const json theirs = {{kDoNotDisrupt, "true"}};
  json terminating = Pod("going", -absl::Seconds(1));
  terminating["metadata"]["deletionTimestamp"] = Rfc3339(kNow);
  json finished = Pod("done", -absl::Seconds(1));
  finished["status"]["phase"] = "Succeeded";
  struct Case {
    std::string name;
    json pod;
    std::vector<bool> want;  // the change, if any
  };
  const std::vector<Case> cases = {
      {"starting, unguarded: guard", Pod("a", -absl::Seconds(1)), {true}},
      {"starting, guarded: nothing", Pod("a", -absl::Seconds(1), ours), {}},
      {"ready 1 min, unguarded: guard", Pod("a", absl::Minutes(1)), {true}},
      {"ready 1 min, guarded: nothing", Pod("a", absl::Minutes(1), ours), {}},
      {"ready 2 min, guarded: unguard",
       Pod("a", absl::Minutes(2), ours),
       {false}},
      {"ready 1 h, unguarded: nothing", Pod("a", absl::Hours(1)), {}},
      {"the template's own do-not-disrupt, starting: left alone",
       Pod("a", -absl::Seconds(1), theirs),
       {}},
      {"the template's own do-not-disrupt, ready: never removed",
       Pod("a", absl::Hours(1), theirs),
       {}},
      {"terminating: left alone", terminating, {}},
      {"finished: left alone", finished, {}},
  };
  for (const Case& c : cases) {
    const std::vector<GuardChange> got =
        DisruptionGuardChanges({std::make_shared<const json>(c.pod)}, kNow);
    ASSERT_EQ(got.size(), c.want.size()) << c.name;
    if (!got.empty()) {
      EXPECT_EQ(got[0].guard, c.want[0]) << c.name;
      EXPECT_EQ(got[0].pod, c.pod["metadata"]["name"].get<std::string>())
          << c.name;
    }
  }
}

}  // namespace
}  // namespace pilotlight::runtime
