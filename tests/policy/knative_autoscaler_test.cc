// KnativeAutoscaler's bounds: the revision's min-scale and max-scale, which
// the KPA applies to every answer (the endpoint's replica bounds, in the
// simulator's `knative` baseline and `pilotlight controller --policy
// knative` alike).
#include "controller/policy/knative_autoscaler.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace pilotlight::policy {
namespace {

// Ticks every 2 s for `seconds` with `concurrency` in flight, the replicas
// asked for ready at once; the last answer.
int TickFor(KnativeAutoscaler& k, double concurrency, int seconds,
            int& current) {
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  for (int s = 0; s <= seconds; s += 2) {
    current = k.Tick(t0 + absl::Seconds(s), concurrency, 0, current, current);
  }
  return current;
}

TEST(KnativeAutoscalerTest, MaxScaleBoundsABurst) {
  // 400 in flight at 8 slots x 0.7: 72 replicas unbounded.
  KnativeAutoscaler unbounded(8, 0.7);
  int current = 1;
  EXPECT_EQ(TickFor(unbounded, 400, 20, current), 72);
  KnativeAutoscaler bounded(8, 0.7, 0, 8);
  current = 1;
  EXPECT_EQ(TickFor(bounded, 400, 20, current), 8);
}

TEST(KnativeAutoscalerTest, MinScaleKeepsReplicasWhenIdle) {
  KnativeAutoscaler k(8, 0.7, 2, 0);
  int current = 3;
  EXPECT_EQ(TickFor(k, 0, 300, current), 2);  // not zero after the grace
  KnativeAutoscaler to_zero(8, 0.7);
  current = 3;
  EXPECT_EQ(TickFor(to_zero, 0, 300, current), 0);
}

}  // namespace
}  // namespace pilotlight::policy
