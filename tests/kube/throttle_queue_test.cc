#include <thread>

#include "controller/kube/throttle.h"
#include "controller/kube/work_queue.h"
#include "controller/process/real_clock.h"
#include "gtest/gtest.h"
#include "tests/kube/fake_clock.h"

namespace pilotlight::kube {
namespace {

TEST(ThrottleTest, BurstThenQps) {
  FakeClock clock;
  Throttle t(10, 3, clock);  // 10 requests/s, bursts of 3
  const absl::Time t0 = clock.Now();
  EXPECT_EQ(t.Reserve(t0), absl::ZeroDuration());
  EXPECT_EQ(t.Reserve(t0), absl::ZeroDuration());
  EXPECT_EQ(t.Reserve(t0), absl::ZeroDuration());
  EXPECT_EQ(t.Reserve(t0), absl::Milliseconds(100));  // the 4th waits 1/qps
  EXPECT_EQ(t.Reserve(t0), absl::Milliseconds(200));  // and the 5th behind it
  // After a quiet second the bucket is full again, never fuller.
  const absl::Time t1 = t0 + absl::Seconds(10);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(t.Reserve(t1), absl::ZeroDuration()) << i;
  }
  EXPECT_GT(t.Reserve(t1), absl::ZeroDuration());
}

TEST(ThrottleTest, WaitSleepsOnTheClock) {
  FakeClock clock;
  Throttle t(2, 1, clock);
  const absl::Time start = clock.Now();
  t.Wait();
  t.Wait();  // 0.5 s behind the first
  t.Wait();
  EXPECT_EQ(clock.Now() - start, absl::Seconds(1));
}

TEST(WorkQueueTest, DeduplicatesAndNeverHandsOutAKeyTwiceAtOnce) {
  process::RealClock clock;
  WorkQueue q(clock);
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2U);
  EXPECT_EQ(q.Get(), "a");
  q.Add("a");  // changed while in work: not handed out now...
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Len(), 0U);
  q.Done("b");
  q.Done("a");  // ...but queued again when the worker is done
  EXPECT_EQ(q.Len(), 1U);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  q.ShutDown();
  EXPECT_EQ(q.Get(), std::nullopt);
}

TEST(WorkQueueTest, BackOffDoublesPerFailureUntilForgotten) {
  const absl::Duration base = absl::Milliseconds(5);
  const absl::Duration max = absl::Seconds(1);
  EXPECT_EQ(WorkQueue::NextDelay(0, base, max), absl::ZeroDuration());
  EXPECT_EQ(WorkQueue::NextDelay(1, base, max), absl::Milliseconds(5));
  EXPECT_EQ(WorkQueue::NextDelay(3, base, max), absl::Milliseconds(20));
  EXPECT_EQ(WorkQueue::NextDelay(30, base, max), absl::Seconds(1));

  process::RealClock clock;
  WorkQueue q(clock, absl::Milliseconds(20), absl::Seconds(1));
  q.AddRateLimited("k");
  q.AddRateLimited("k");
  EXPECT_EQ(q.Failures("k"), 2);
  EXPECT_EQ(q.Len(), 0U);  // waiting, not queued
  const absl::Time start = absl::Now();
  EXPECT_EQ(q.Get(), "k");  // after the first back-off (20 ms)
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(15));
  q.Done("k");
  q.Forget("k");
  EXPECT_EQ(q.Failures("k"), 0);
}

TEST(WorkQueueTest, GetBlocksUntilAddOrShutDown) {
  process::RealClock clock;
  WorkQueue q(clock);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Add("x");
  worker.join();
  EXPECT_EQ(got, "x");
  std::thread idle([&] { got = q.Get(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.ShutDown();
  idle.join();
  EXPECT_EQ(got, std::nullopt);
}

}  // namespace
}  // namespace pilotlight::kube
