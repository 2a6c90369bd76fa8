// The Router alone: leases least in flight first within each pod's cap,
// holds in arrival order, bounded by count and bytes, pokes once per
// endpoint at zero, and reports exactly what it holds.
#include "controller/activator/router.h"

#include <atomic>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::activator {
namespace {

using ::testing::HasSubstr;

constexpr char kEp[] = "ml/llama";

absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

TEST(RouterTest, UnknownEndpointIsNotFound) {
  Router r({.unknown_endpoint_wait = absl::ZeroDuration()});
  EXPECT_EQ(r.Acquire("ml/none", 0, Soon()).status().code(),
            absl::StatusCode::kNotFound);
}

// An endpoint listed a moment after its first request (the activator's
// watch behind the controller's): the request waits for it and is served.
TEST(RouterTest, ARequestAheadOfItsEndpointWaitsForIt) {
  Router r({.unknown_endpoint_wait = absl::Seconds(30)});
  std::thread lister([&] {
    absl::SleepFor(absl::Milliseconds(100));
    r.SetTargets(kEp, {"a:1"}, 1);
    r.SetEndpoints({kEp});
  });
  const absl::Time start = absl::Now();
  absl::StatusOr<Lease> l = r.Acquire(kEp, 0, Soon());
  lister.join();
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->address(), "a:1");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(r.DemandOf(kEp, absl::Now()).arrivals_total, 1);
}

// Never listed: NotFound after the wait (or the request's deadline, if
// sooner); past `max_unknown_waiting` at once; the client leaving or the
// activator closing end the wait early.
TEST(RouterTest, AnEndpointNeverListedIsNotFoundAfterTheWait) {
  Router r({.unknown_endpoint_wait = absl::Milliseconds(150),
            .max_unknown_waiting = 1});
  std::thread first([&] {
    const absl::Time start = absl::Now();
    const absl::Status s = r.Acquire("ml/none", 0, Soon()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_GE(absl::Now() - start, absl::Milliseconds(150));
  });
  absl::SleepFor(absl::Milliseconds(30));
  // The one waiting place is taken: answered at once.
  const absl::Time start = absl::Now();
  EXPECT_EQ(r.Acquire("ml/other", 0, Soon()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(100));
  first.join();
  EXPECT_EQ(r.Acquire("ml/none", 0, absl::Now() + absl::Milliseconds(20))
                .status()
                .code(),
            absl::StatusCode::kNotFound);

  std::atomic<bool> cancelled{false};
  Router slow({.unknown_endpoint_wait = absl::Seconds(30)});
  std::thread leaving([&] {
    absl::SleepFor(absl::Milliseconds(50));
    cancelled = true;
    slow.Wake("ml/none");
  });
  EXPECT_EQ(slow.Acquire("ml/none", 0, Soon(), &cancelled).status().code(),
            absl::StatusCode::kCancelled);
  leaving.join();
  std::thread closing([&] {
    absl::SleepFor(absl::Milliseconds(50));
    slow.Close();
  });
  EXPECT_EQ(slow.Acquire("ml/none", 0, Soon()).status().code(),
            absl::StatusCode::kUnavailable);
  closing.join();
}

// `n` leases on kEp's targets, kept in `leases`: their addresses in order.
std::vector<std::string> AcquireEach(Router& r, int n,
                                     std::deque<Lease>& leases) {
  std::vector<std::string> got;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<Lease> l = r.Acquire(kEp, 0, Soon());
    EXPECT_TRUE(l.ok()) << l.status();
    if (!l.ok()) {
      break;
    }
    got.push_back(l->address());
    leases.emplace_back(*std::move(l));
  }
  return got;
}

TEST(RouterTest, LeastInFlightWithinTheCap) {
  Router r({});
  r.SetEndpoints({kEp});
  r.SetTargets(kEp, {"a:1", "b:1"}, 2);
  std::deque<Lease> leases;
  const std::vector<std::string> got = AcquireEach(r, 4, leases);
  ASSERT_EQ(leases.size(), 4U);
  EXPECT_FALSE(leases[0].cold());  // the pods were there first
  // Alternates, then both are at their cap of 2: the next one waits.
  EXPECT_THAT(got, ::testing::UnorderedElementsAre("a:1", "a:1", "b:1", "b:1"));
  EXPECT_EQ(
      r.Acquire(kEp, 0, absl::Now() + absl::Milliseconds(50)).status().code(),
      absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.DemandOf(kEp, absl::Now()).in_flight, 4);
  leases.clear();
  EXPECT_EQ(r.DemandOf(kEp, absl::Now()).in_flight, 0);
}

// A target whose engine refused a wake goes after the endpoint's others
// (its requests wait there only while no other can take them), counts in
// the demand, and pokes the controller.
TEST(RouterTest, ATargetThatRefusedAWakeGoesLast) {
  int pokes = 0;
  Router r({}, [&pokes](const std::string&) { ++pokes; });
  r.SetEndpoints({kEp});
  r.SetTargets(kEp, {"a:1", "b:1"}, 2);
  EXPECT_TRUE(r.KeepsWaitingOn(kEp, "a:1"));
  r.WakeRefused(kEp, "a:1");
  EXPECT_EQ(pokes, 1);
  EXPECT_EQ(r.DemandOf(kEp, absl::Now()).wakes_refused_total, 1);
  EXPECT_FALSE(r.KeepsWaitingOn(kEp, "a:1")) << "b:1 can take it";
  EXPECT_TRUE(r.KeepsWaitingOn(kEp, "b:1"));
  EXPECT_FALSE(r.KeepsWaitingOn(kEp, "c:1")) << "not a target";
  // b:1 first, up to its cap; then a:1 rather than a wait.
  std::deque<Lease> leases;  // the first given back first
  const std::vector<std::string> got = AcquireEach(r, 3, leases);
  ASSERT_EQ(leases.size(), 3U);
  EXPECT_THAT(got, ::testing::ElementsAre("b:1", "b:1", "a:1"));
  // b:1 full: a request on a:1 waits there (it would be picked again).
  EXPECT_TRUE(r.KeepsWaitingOn(kEp, "a:1"));
  leases.pop_front();  // a b:1 slot
  EXPECT_FALSE(r.KeepsWaitingOn(kEp, "a:1"));
  // Kept through a refresh of the targets; the only target left, its
  // requests wait on it.
  r.SetTargets(kEp, {"a:1"}, 2);
  EXPECT_TRUE(r.KeepsWaitingOn(kEp, "a:1"));
  r.SetTargets(kEp, {"a:1", "b:1"}, 2);
  EXPECT_FALSE(r.KeepsWaitingOn(kEp, "a:1"));
}

TEST(RouterTest, HoldsAtZeroPokesOnceAndReleasesInOrder) {
  std::atomic<int> pokes{0};
  Router r({}, [&](const std::string& ep) {
    EXPECT_EQ(ep, kEp);
    ++pokes;
  });
  r.SetEndpoints({kEp});
  std::vector<std::thread> clients;
  std::mutex mu;
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      absl::StatusOr<Lease> l = r.Acquire(kEp, 100, Soon());
      ASSERT_TRUE(l.ok()) << l.status();
      EXPECT_GT(l->held(), absl::ZeroDuration());
      EXPECT_TRUE(l->cold());  // its pod came after it
      const std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
    // Arrival order is the order they were started in.
    while (r.DemandOf(kEp, absl::Now()).held != i + 1) {
      std::this_thread::yield();
    }
  }
  const EndpointDemand held = r.DemandOf(kEp, absl::Now());
  EXPECT_EQ(held.held, 3);
  EXPECT_EQ(held.held_bytes, 300);
  EXPECT_TRUE(held.no_replica);
  EXPECT_EQ(held.arrivals_total, 3);
  EXPECT_EQ(pokes.load(), 3);  // each held request at zero tells the reporter
  // One pod, one slot: they leave one at a time, first come first served.
  r.SetTargets(kEp, {"a:1"}, 1);
  for (std::thread& t : clients) {
    t.join();
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(r.held_total(), 0);
}

TEST(RouterTest, TheHoldIsBoundedByCountAndBytes) {
  HoldLimits limits;
  limits.max_held_per_endpoint = 2;
  limits.max_held_bytes_per_endpoint = 1000;
  limits.max_held_total = 3;
  Router r(limits);
  r.SetEndpoints({kEp, "ml/other"});
  std::vector<std::thread> held;
  const absl::Time until = absl::Now() + absl::Milliseconds(300);
  for (int i = 0; i < 2; ++i) {
    held.emplace_back([&] { (void)r.Acquire(kEp, 10, until); });
  }
  while (r.held_total() != 2) {
    std::this_thread::yield();
  }
  absl::Status st = r.Acquire(kEp, 10, until).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("held for this endpoint"));
  st = r.Acquire("ml/other", 2000, until).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(st.message(), HasSubstr("bytes held for this endpoint"));
  held.emplace_back([&] { (void)r.Acquire("ml/other", 10, until); });
  while (r.held_total() != 3) {
    std::this_thread::yield();
  }
  st = r.Acquire("ml/other", 10, until).status();
  EXPECT_THAT(st.message(), HasSubstr("held in total"));
  for (std::thread& t : held) {
    t.join();
  }
  EXPECT_EQ(r.held_total(), 0);
}

TEST(RouterTest, CloseWakesTheHeld) {
  Router r({});
  r.SetEndpoints({kEp});
  std::thread t([&] {
    EXPECT_EQ(r.Acquire(kEp, 0, Soon()).status().code(),
              absl::StatusCode::kUnavailable);
  });
  while (r.held_total() != 1) {
    std::this_thread::yield();
  }
  r.Close();
  t.join();
}

}  // namespace
}  // namespace pilotlight::activator
