// Timeline tests of the decider with explicit times: a World (world.h)
// applies each decision as a Deployment would, with a fixed cold start.
#include "controller/policy/decider.h"

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "controller/policy/variant_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/world.h"

namespace pilotlight::policy {
namespace {

using ::testing::HasSubstr;
using testing::Llama8b;
using testing::T0;
using testing::Variant;
using testing::World;

constexpr absl::Duration kTick = absl::Seconds(2);

model::Catalog DefaultCatalog() { return *model::Catalog::Default(); }

// A world of one on-demand A100-80GB variant whose replicas take 60 s to
// start, with that cold start already learned.
World OneA100() {
  World w(Llama8b({Variant("chat-a100", "a100-80gb")}), DefaultCatalog());
  w.ReportColdStart(0, absl::Seconds(60), 5);
  return w;
}

DemandSample Queued(absl::Time at, double queued, double arrivals) {
  DemandSample d;
  d.at = at;
  d.in_flight = 0.0;
  d.queued = queued;
  d.arrivals = arrivals;
  return d;
}

// Runs `w` from `from` for `dur` at a constant concurrency; returns the end.
absl::Time Steady(World& w, absl::Time from, absl::Duration dur, double conc) {
  absl::Time t = from;
  for (; t < from + dur; t += kTick) {
    w.Step(t, {World::Sample(t, conc, conc > 0 ? 1 : 0)});
  }
  return t;
}

// Scale from zero on the first arrival, without waiting for any window.
TEST(DeciderTest, ScalesFromZeroOnFirstArrival) {
  World w = OneA100();
  const Decision& idle = w.Step(T0(), {World::Sample(T0(), 0)});
  EXPECT_TRUE(idle.valid);
  EXPECT_EQ(idle.variants[0].replicas, 0);
  const absl::Time t = T0() + kTick;
  const Decision& d = w.Step(t, {Queued(t, 1, 1)});
  EXPECT_TRUE(d.valid);
  EXPECT_EQ(d.variants[0].replicas, 1);
  EXPECT_EQ(d.reason, ScaleReason::kScaleFromZero);
  EXPECT_EQ(d.variants[0].reason, ScaleReason::kScaleFromZero);
  EXPECT_THAT(d.message, HasSubstr("ScaleFromZero"));
}

// At zero nothing is in flight and the held queue weighs S / L, so a steady
// stream started from zero used to be met by a few replicas a tick while
// its hold overflowed (ServeGen: 25-40k requests refused). Now the offered
// load -- the arrival rate's one-sigma lower bound times the service time
// at the batch a replica runs -- sizes the first replicas; a trickle of
// requests still asks for one.
TEST(DeciderTest, AtZeroASteadyStreamAsksForItsOfferedLoad) {
  const EndpointSpec spec = Llama8b({Variant("chat-a100", "a100-80gb")});
  const model::Catalog catalog = DefaultCatalog();
  const absl::StatusOr<VariantModel> m =
      DeriveVariant(spec, 0, catalog, model::EngineTuning{});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_GT(m->capacity, 0);
  const double loaded_s =
      m->ttft_s + spec.workload.output_tokens *
                      m->replica.TpotSeconds(m->capacity, spec.workload);
  // A rate that needs 8 replicas at their capacity, steadily.
  const double rate = 8.0 * m->capacity / loaded_s;
  const double per_tick = rate * absl::ToDoubleSeconds(kTick);
  ASSERT_GE(per_tick, 20) << "a stream, not a trickle";
  struct Case {
    std::string name;
    double per_tick;
    int min_replicas;  // asked for within 10 s (the cold start is 60 s)
    int max_replicas;
  };
  const std::vector<Case> cases = {
      // (n - sqrt n) / t after the first ticks: ~90 % of the rate.
      {"stream", per_tick, 6, 8},
      {"one request a tick", 1, 1, 1},
      {"nothing", 0, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    World w = OneA100();
    w.Step(T0(), {World::Sample(T0(), 0)});
    double held = 0;
    int asked = 0;
    for (absl::Time t = T0() + kTick; t <= T0() + absl::Seconds(10);
         t += kTick) {
      held += c.per_tick;
      w.Step(t, {Queued(t, held, c.per_tick)});
      asked = std::max(asked, w.TotalDesired());
    }
    EXPECT_GE(asked, c.min_replicas) << w.last().message;
    EXPECT_LE(asked, c.max_replicas) << w.last().message;
    if (c.per_tick > 20) {
      EXPECT_THAT(w.last().message, HasSubstr("offered load at zero"));
    }
  }
}

// The activator pokes on every request held at zero, so the decider is
// asked every few tens of milliseconds: a rate over 50 ms is noise, not a
// stream. Two and three requests 50 ms apart forecast a few requests in
// flight, not a replica's worth (the rate is measured over at least
// offered_load_min_window); a stream at the same pokes still asks for
// more replicas within the tick.
TEST(DeciderTest, AtZeroPokesMilliSecondsApartAreNotARate) {
  // The first sample the decider gets is the first poke (a controller
  // whose earlier samples were partial: activators not yet reported).
  World w = OneA100();
  const absl::Time t1 = T0() + kTick;
  double held = 0;
  for (int i = 0; i < 3; ++i) {
    const absl::Time t = t1 + absl::Milliseconds(50 * i);
    held += 1;
    w.Step(t, {Queued(t, held, 1)});
    // Two requests 50 ms apart made 50 in flight of a 55-slot replica.
    EXPECT_LT(w.last().forecast_concurrency, 5)
        << i << ": " << w.last().message;
    EXPECT_EQ(w.TotalDesired(), 1) << i << ": " << w.last().message;
  }
  // 40 requests in the next 400 ms (100/s): that is a stream.
  for (int i = 1; i <= 8; ++i) {
    const absl::Time t = t1 + absl::Milliseconds(100 + 50 * i);
    held += 5;
    w.Step(t, {Queued(t, held, 5)});
  }
  EXPECT_GT(w.TotalDesired(), 1) << w.last().message;
  EXPECT_THAT(w.last().message, HasSubstr("offered load at zero"));
}

// A controller (re)started next to a running, idle endpoint knows nothing of
// what came before: the endpoint counts as idle from the first sample, so
// it keeps its replica for the keep-alive instead of dropping to zero at
// once.
TEST(DeciderTest, FirstSampleStartsTheIdleClock) {
  World w = OneA100();
  w.SetRunning(0, 1);
  const Decision& first = w.Step(T0(), {World::Sample(T0(), 0)});
  EXPECT_EQ(first.variants[0].replicas, 1) << first.message;
  EXPECT_EQ(first.reason, ScaleReason::kKeepAlive) << first.message;
  ASSERT_TRUE(first.keep_alive_until.has_value());
  EXPECT_EQ(*first.keep_alive_until, T0() + first.keep_alive);
  absl::Time t = T0();
  for (; t < T0() + first.keep_alive + absl::Seconds(30); t += kTick) {
    w.Step(t, {World::Sample(t, 0)});
  }
  EXPECT_EQ(w.last().variants[0].replicas, 0) << w.last().message;
}

// A burst enters panic and the replicas never fall while it lasts.
TEST(DeciderTest, PanicOnBurstAndNoScaleDownDuringIt) {
  World w = OneA100();
  absl::Time t = Steady(w, T0(), absl::Minutes(5), 40);
  ASSERT_EQ(w.TotalDesired(), 1);
  const int cap = w.last().capacity_per_replica;
  ASSERT_GT(cap, 0);
  // Burst to 4x capacity for 20 s: panic (needs >= 2x the ready replica).
  t = Steady(w, t, absl::Seconds(20), 4.0 * cap);
  EXPECT_TRUE(w.last().panic);
  const int peak = w.TotalDesired();
  EXPECT_GE(peak, 4);
  // Load falls at once; panic holds the replicas for a stable window.
  for (absl::Time end = t + absl::Seconds(50); t < end; t += kTick) {
    const Decision& d = w.Step(t, {World::Sample(t, 10, 1)});
    EXPECT_GE(w.TotalDesired(), peak)
        << absl::FormatTime(t) << " " << d.message;
  }
  // Long after, it comes back down to the load's one replica plus the warm
  // pool that the burst taught it (rises this large are > 1 % of its
  // history now).
  Steady(w, t, absl::Minutes(6), 10);
  EXPECT_FALSE(w.last().panic);
  EXPECT_EQ(w.last().load_replicas, 1);
  EXPECT_LT(w.TotalDesired(), peak);
  EXPECT_EQ(w.TotalDesired(), 1 + w.last().warm_pool) << w.last().message;
}

// Noisy load straddling a replica boundary does not flap.
TEST(DeciderTest, NoFlappingOnNoisySteadyLoad) {
  World w = OneA100();
  absl::Time t = Steady(w, T0(), absl::Minutes(1), 1);
  const int cap = w.last().capacity_per_replica;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(-0.15, 0.15);
  const double mean = 2.0 * cap;  // the boundary between 2 and 3 replicas
  int changes = 0;
  int last = -1;
  // The step from 1 to the mean is a real rise: the warm pool remembers it
  // for ~20 minutes of rise samples. Count changes after that, for an hour.
  for (const absl::Time end = t + absl::Minutes(90); t < end; t += kTick) {
    w.Step(t, {World::Sample(t, mean * (1 + noise(rng)), 3)});
    if (t > T0() + absl::Minutes(31)) {
      changes += (last >= 0 && w.TotalDesired() != last) ? 1 : 0;
    }
    last = w.TotalDesired();
  }
  EXPECT_LE(changes, 2) << "replica count changed " << changes
                        << " times in an hour of noisy steady load";
  EXPECT_GE(last, 3);  // and it covers the noisy peaks
}

// An endpoint hit once every 17 minutes learns its period: after a few
// periods no request meets a cold start, at well under always-on's cost.
TEST(DeciderTest, PeriodicEndpointPreWarmsAfterLearning) {
  World w = OneA100();
  const absl::Duration period = absl::Minutes(17);
  const absl::Duration busy = absl::Seconds(20);
  double cold_late = 0;
  double requests_late = 0;
  absl::Time t = T0();
  const absl::Time end = T0() + absl::Hours(24);
  bool saw_prewarm = false;
  while (t < end) {
    const absl::Duration phase = (t - T0()) - absl::Floor(t - T0(), period);
    const bool active = phase < busy;
    const double arrivals = phase < kTick ? 1 : 0;
    const double cold_before = w.cold_requests();
    const Decision& d = w.Step(t, {World::Sample(t, active ? 1 : 0, arrivals)});
    saw_prewarm = saw_prewarm || d.reason == ScaleReason::kPreWarm;
    if (t > T0() + absl::Hours(12)) {
      requests_late += arrivals;
      cold_late += w.cold_requests() - cold_before;
    }
    t += kTick;
  }
  EXPECT_TRUE(saw_prewarm);
  EXPECT_GT(requests_late, 40);
  EXPECT_EQ(cold_late, 0) << "cold-start requests in the second 12 h";
  const double always_on_usd = 24 * 3.4309;  // one A100-80GB all day
  EXPECT_LT(w.cost_usd(), 0.5 * always_on_usd)
      << "cost $" << w.cost_usd() << " vs always-on $" << always_on_usd
      << ", replica-hours " << w.replica_seconds() / 3600;
}

// Keep-alive stays within the ski-rental break-even T* until the cold-start
// budget of the SLO is overrun; then the SLO is the cause to keep longer.
TEST(DeciderTest, KeepAliveBoundedByBreakEvenWithoutCause) {
  World w = OneA100();
  std::mt19937 rng(3);
  // 10 % of gaps are 30 s (so no pre-warm: the head is the first bin), the
  // rest 3-8 min, past T* = 2 x 60 s: each of those meets a cold start.
  std::uniform_real_distribution<double> long_gap_min(3, 8);
  absl::Time t = T0();
  bool exceeded = false;
  for (int burst = 0; burst < 60; ++burst) {
    // A burst of 5 requests over 10 s.
    for (int i = 0; i < 5; ++i, t += kTick) {
      w.Step(t, {World::Sample(t, 1, 1)});
    }
    const double gap_s = burst % 10 == 0 ? 30 : long_gap_min(rng) * 60;
    for (const absl::Time next = t + absl::Seconds(gap_s); t < next;
         t += kTick) {
      const Decision& d = w.Step(t, {World::Sample(t, 0, 0)});
      if (d.keep_alive > d.break_even) {
        // The cause is named: the predicted or the observed SLO budget.
        EXPECT_THAT(d.message, ::testing::AnyOf(HasSubstr("over budget"),
                                                HasSubstr("SLO needs")))
            << "keep-alive " << d.keep_alive << " > T* " << d.break_even
            << " without cause";
        exceeded = true;
      }
    }
  }
  EXPECT_EQ(w.last().break_even, absl::Seconds(120));
  EXPECT_TRUE(exceeded) << "cold starts overran the 1 % budget, so the "
                           "keep-alive should have grown past T*";
  EXPECT_GT(w.cold_requests(), 0);
}

// One burst at zero -- 200 requests at once, the endpoint's first traffic --
// meets a cold start whatever the keep-alive: it is not evidence that the
// keep-alive is too short. Once served and idle, the endpoint keeps its
// last replica for the ski-rental break-even, not for hours.
TEST(DeciderTest, AFirstBurstAtZeroDoesNotStretchTheKeepAlive) {
  World w = OneA100();
  absl::Time t = T0();
  w.Step(t, {World::Sample(t, 0, 0)});
  t += kTick;
  DemandSample burst = World::Sample(t, 0, 200);
  burst.queued = 200.0;
  w.Step(t, {burst});
  // Held until a replica is ready, then served for a minute.
  absl::Time served_until = absl::InfiniteFuture();
  for (t += kTick; t < T0() + absl::Minutes(30); t += kTick) {
    if (w.TotalReady() > 0 && served_until == absl::InfiniteFuture()) {
      served_until = t + absl::Minutes(1);
    }
    DemandSample d = World::Sample(t, t < served_until ? 200 : 0, 0);
    if (served_until == absl::InfiniteFuture()) {
      d.in_flight = 0.0;
      d.queued = 200.0;
    }
    const Decision& dec = w.Step(t, {d});
    EXPECT_LE(dec.keep_alive, dec.break_even)
        << "at " << (t - T0()) << ": " << dec.message;
  }
  EXPECT_EQ(w.cold_requests(), 200);
  EXPECT_EQ(w.TotalDesired(), 0) << w.last().message;
}

// A sparse endpoint (a request every one to three hours, and one gap in ten
// of 30 s, so no pre-warm: the histogram's head is its first bin): nearly
// every request meets a cold start at the ski-rental keep-alive (T* =
// 2 min), so the 1 % budget keeps a replica warm across the gaps. The
// status says what that costs a day -- by hand, the gaps a day x (their
// mean - 2 min) x the idle price -- and slo.maxKeepAliveCostPerDayUSD holds
// it to a bound, saying what the budget would need and how many requests
// will be cold instead.
struct SparseRun {
  Decision last_idle;  // 50 minutes into the last long gap
  double cold_requests = 0;
  double gaps_per_day = 0;  // of the generated gaps
  double mean_extra_s = 0;  // mean of gap - min(gap, T*)
};
SparseRun RunSparse(std::optional<double> cap) {
  World w = OneA100();
  w.spec().slo.max_keep_alive_cost_per_day_usd = cap;
  SparseRun r;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> gap_min(60, 180);
  absl::Time t = T0();
  double extra_s = 0;
  const int gaps = 40;
  for (int gap = 0; gap < gaps; ++gap) {
    for (int i = 0; i < 2; ++i, t += kTick) {
      w.Step(t, {World::Sample(t, 1, i == 0 ? 1 : 0)});
    }
    const double g_s = gap % 10 == 5 ? 30 : 60 * gap_min(rng);
    extra_s += g_s - std::min(g_s, 120.0);
    const absl::Time next = t + absl::Seconds(g_s);
    for (const absl::Time mid = t + absl::Minutes(50); t < next;
         t += absl::Seconds(20)) {
      const Decision& d = w.Step(t, {World::Sample(t, 0, 0)});
      if (g_s > 3600 && t <= mid) {
        r.last_idle = d;
      }
    }
  }
  r.cold_requests = w.cold_requests();
  r.gaps_per_day = gaps / absl::ToDoubleSeconds(t - T0()) * 86400;
  r.mean_extra_s = extra_s / gaps;
  return r;
}

TEST(DeciderTest, SparseEndpointIsToldWhatItsColdStartBudgetCosts) {
  const SparseRun free = RunSparse(std::nullopt);
  const Decision& d = free.last_idle;
  const Economics& e = d.economics;
  ASSERT_EQ(d.break_even, absl::Seconds(120));
  EXPECT_GT(d.keep_alive, absl::Minutes(150)) << d.message;
  EXPECT_EQ(d.reason, ScaleReason::kKeepAlive) << d.message;
  const double by_hand =
      free.gaps_per_day * free.mean_extra_s / 3600 * e.idle_cost_per_hour;
  EXPECT_NEAR(e.budget_cost_per_day, by_hand, 0.15 * by_hand);
  EXPECT_FALSE(e.budget_capped);
  EXPECT_GT(e.cold_fraction_at_break_even, 0.5);  // nearly every request
  EXPECT_LT(e.cold_fraction_expected, 0.05);
  EXPECT_THAT(d.message, HasSubstr("/day idle")) << d.message;

  // Bounded at $5 a day: the keep-alive is what $5 buys, the replica goes
  // in the gaps, and the status says so.
  const SparseRun capped = RunSparse(5.0);
  const Decision& c = capped.last_idle;
  EXPECT_TRUE(c.economics.budget_capped);
  EXPECT_LE(c.economics.budget_cost_per_day, 5.0);
  EXPECT_GT(c.economics.budget_cost_per_day, 0.0);
  EXPECT_LT(c.keep_alive, absl::Minutes(50));
  EXPECT_EQ(c.reason, ScaleReason::kScaledToZero) << c.message;
  EXPECT_THAT(c.message, HasSubstr("maxKeepAliveCostPerDayUSD $5.00/day"))
      << c.message;
  EXPECT_GT(c.economics.cold_fraction_expected, 0.5);
  EXPECT_GT(capped.cold_requests, free.cold_requests + 20);
}

// From `from`, a burst of 5 requests, then `idle` with nothing; returns
// when it ends (w.last() is the last decision).
absl::Time BurstThenIdle(World& w, absl::Time from, absl::Duration idle) {
  absl::Time t = from;
  for (int i = 0; i < 5; ++i, t += kTick) {
    w.Step(t, {World::Sample(t, 1, 1)});
  }
  for (const absl::Time end = t + idle; t < end; t += kTick) {
    w.Step(t, {World::Sample(t, 0, 0)});
  }
  return t;
}

// An engine that can sleep in a shared pool and wakes within the TTFT SLO:
// idle, the replica goes after the grace and its engine is kept asleep --
// where without the pool the replica idles for the break-even (120 s).
// One that wakes slower than the TTFT SLO is no different from a cold
// start: the keep-alive is the usual one.
TEST(DeciderTest, AnEngineThatCanSleepIsKeptAsleepNotAwake) {
  struct Case {
    std::string name;
    std::optional<SleepState> sleep;
    int replicas_at_90s;
    int asleep;
  };
  const Case cases[] = {
      {"no pool", std::nullopt, 1, 0},
      {"wakes in 1.1 s",
       SleepState{.wake = absl::Milliseconds(1100),
                  .asleep = 0,
                  .asleep_price_per_hour = 0.49},
       0, 1},
      {"wakes slower than the TTFT SLO",
       SleepState{.wake = absl::Seconds(3), .asleep_price_per_hour = 0.49}, 1,
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    World w = OneA100();
    if (c.sleep) {
      w.SetSleep(0, *c.sleep);
    }
    BurstThenIdle(w, T0(), absl::Seconds(90));
    const Decision& d = w.last();
    EXPECT_EQ(d.variants[0].replicas, c.replicas_at_90s) << d.message;
    EXPECT_EQ(d.variants[0].asleep, c.asleep) << d.message;
    if (c.asleep > 0) {
      EXPECT_THAT(d.message, HasSubstr("engine asleep (wakes in 1.1 s)"));
      // Its keep-alive is priced at the asleep share against what a cold
      // start burns on an awake replica: T* = 2 x 60 s x $3.43 / $0.49.
      EXPECT_NEAR(absl::ToDoubleSeconds(d.asleep_keep), 120 * 3.43 / 0.49, 15);
      ASSERT_TRUE(d.asleep_until.has_value());
    } else {
      EXPECT_EQ(d.asleep_until, std::nullopt);
    }
  }
}

// The first requests met no engine at all: over the cold-start budget, the
// engine stays asleep however long the gap -- the idle-gap histogram sees 4
// hours, a sparse endpoint's gaps are longer.
TEST(DeciderTest, OverTheColdStartBudgetTheEngineStaysAsleep) {
  World w = OneA100();
  w.SetSleep(0, {.wake = absl::Seconds(1), .asleep_price_per_hour = 0.49});
  // An idle gap recorded first, then the burst and a long gap.
  const absl::Time t = BurstThenIdle(w, T0(), absl::Minutes(10));
  BurstThenIdle(w, t, absl::Hours(6));
  const Decision& d = w.last();
  EXPECT_EQ(d.variants[0].replicas, 0) << d.message;
  EXPECT_EQ(d.variants[0].asleep, 1) << d.message;
  EXPECT_EQ(d.asleep_keep, absl::InfiniteDuration()) << d.message;
  EXPECT_THAT(d.message, HasSubstr("kept asleep"));
}

// Batch on spot: a preemption brings on-demand in until spot is back, then
// the on-demand extra drains.
TEST(DeciderTest, SpotPreemptionFallsBackToOnDemandAndReturns) {
  EndpointSpec spec =
      Llama8b({Variant("batch-od", "a100-80gb"),
               Variant("batch-spot", "a100-80gb", CapacityType::kSpot)});
  spec.mode = Mode::kBatch;
  World w(spec, DefaultCatalog());
  w.ReportColdStart(0, absl::Seconds(60), 5);
  w.ReportColdStart(1, absl::Seconds(60), 5);
  absl::Time t = Steady(w, T0(), absl::Minutes(1), 1);
  const int cap = w.last().capacity_per_replica;
  const double conc = 1.5 * cap;  // two replicas
  t = Steady(w, t, absl::Minutes(10), conc);
  const int spot_ready = w.state(1).ready;
  ASSERT_GE(spot_ready, 2);
  ASSERT_EQ(w.state(0).desired, 0) << "batch runs wholly on spot";

  // Zone-wide preemption: every spot replica gone; spot cannot place.
  w.Preempt(1, spot_ready);
  w.SetPlaceable(1, false);
  w.SetSpot({{"a100-80gb", t, std::nullopt}});
  const absl::Time preempted = t;
  bool fell_back = false;
  absl::Duration short_of_capacity;
  for (const absl::Time end = t + absl::Minutes(4); t < end; t += kTick) {
    const Decision& d = w.Step(t, {World::Sample(t, conc, 2)});
    if (d.variants[0].reason == ScaleReason::kSpotFallback) {
      fell_back = true;
      EXPECT_EQ(d.variants[0].replicas, d.variants[1].replicas) << d.message;
    }
    if (w.TotalReady() < 2) {
      short_of_capacity += kTick;
    }
  }
  EXPECT_TRUE(fell_back);
  // Ready capacity is short for no longer than one cold start (+ a tick).
  EXPECT_LE(short_of_capacity, absl::Seconds(62));
  EXPECT_EQ(w.state(0).ready, spot_ready);

  // Spot is back: the spot replicas become ready, the on-demand drains.
  w.SetPlaceable(1, true);
  t = Steady(w, t, absl::Minutes(4), conc);
  EXPECT_GT(t - preempted, absl::Minutes(5));
  EXPECT_EQ(w.state(1).ready, w.state(1).desired);
  EXPECT_GE(w.state(1).ready, 2);
  EXPECT_EQ(w.state(0).desired, 0) << w.last().message;
}

// Realtime keeps what current demand needs on on-demand; only the headroom
// above it (scale-ahead, warm pool) goes to the cheaper spot variant.
TEST(DeciderTest, RealtimeKeepsSloFloorOnDemand) {
  EndpointSpec spec =
      Llama8b({Variant("chat-od", "a100-80gb"),
               Variant("chat-spot", "a100-80gb", CapacityType::kSpot)});
  World w(spec, DefaultCatalog());
  w.ReportColdStart(0, absl::Seconds(60), 5);
  w.ReportColdStart(1, absl::Seconds(60), 5);
  absl::Time t = Steady(w, T0(), absl::Minutes(1), 1);
  const int cap = w.last().capacity_per_replica;
  // A steady ramp: the forecast one lead ahead is above today's demand.
  bool spot_used = false;
  for (int i = 0; i < 300; ++i, t += kTick) {
    const double conc = 0.5 * cap + 0.02 * cap * i;
    const Decision& d = w.Step(t, {World::Sample(t, conc, 3)});
    const int floor = static_cast<int>(
        std::ceil(d.demand_concurrency / d.capacity_per_replica - 1e-9));
    EXPECT_GE(d.variants[0].replicas, std::min(floor, d.load_replicas))
        << d.message;
    spot_used = spot_used || d.variants[1].replicas > 0;
  }
  EXPECT_TRUE(spot_used);
  EXPECT_GT(w.last().forecast_concurrency, w.last().demand_concurrency);
  EXPECT_THAT(w.last().message, HasSubstr("trend"));
}

// The economics behind each decision (pilotlight explain) are the numbers
// the decision was made with: every tier priced, T* = B / r, the warm
// pool's price and the cold starts it prevents. Checked on every decision
// of a bursty load over two tiers, one with spot.
TEST(DeciderTest, EconomicsAreTheDecisionsOwnNumbers) {
  EndpointSpec spec =
      Llama8b({Variant("chat-od", "a100-80gb"),
               Variant("chat-spot", "a100-80gb", CapacityType::kSpot),
               Variant("chat-h100", "h100-80gb-sxm")});
  World w(spec, DefaultCatalog());
  for (size_t v = 0; v < 3; ++v) {
    w.ReportColdStart(v, absl::Seconds(60), 5);
  }
  absl::Time t = Steady(w, T0(), absl::Minutes(2), 10);
  bool warm_seen = false;
  for (int i = 0; i < 400; ++i, t += kTick) {
    // Bursty: rises the warm pool is sized for.
    const double conc = 20 + ((i / 15) % 2 == 0 ? 0 : 60);
    const Decision& d = w.Step(t, {World::Sample(t, conc, 3)});
    ASSERT_TRUE(d.valid) << d.message;
    const Economics& e = d.economics;
    ASSERT_EQ(e.tiers.size(), 2U);  // a100-80gb (od + spot), h100
    int chosen = 0;
    for (const TierOption& o : e.tiers) {
      chosen += o.gpu_class == d.tier ? 1 : 0;
      EXPECT_EQ(o.on_demand + o.spot, o.replicas) << o.gpu_class;
      EXPECT_GT(o.capacity_per_replica, 0) << o.gpu_class;
    }
    EXPECT_EQ(chosen, 1) << d.tier;
    // Ski rental: the break-even is B / r.
    ASSERT_GT(e.idle_cost_per_hour, 0);
    EXPECT_NEAR(absl::ToDoubleSeconds(d.break_even),
                3600 * e.cold_start_cost_usd / e.idle_cost_per_hour, 1e-6);
    // The warm pool at the on-demand price; never more cold starts with it.
    EXPECT_NEAR(
        e.warm_pool_cost_per_hour,
        d.warm_pool * d.always_on_cost_per_hour / std::max(1, d.load_replicas),
        1e-9);
    EXPECT_LE(e.cold_starts_per_hour_with_warm,
              e.cold_starts_per_hour_without_warm);
    if (d.warm_pool > 0) {
      warm_seen = true;
      EXPECT_LT(e.cold_starts_per_hour_with_warm,
                e.cold_starts_per_hour_without_warm);
    }
  }
  EXPECT_TRUE(warm_seen) << "the bursts never asked for a warm pool";
}

// A cheaper tier wins only after it has been cheaper for 10 minutes, and
// the old tier drains only once the new one is ready.
TEST(DeciderTest, TierSwitchIsMakeBeforeBreak) {
  World w(Llama8b({Variant("chat-sxm", "h100-80gb-sxm"),
                   Variant("chat-pcie", "h100-80gb-pcie")}),
          DefaultCatalog());
  w.ReportColdStart(0, absl::Seconds(60), 5);
  w.ReportColdStart(1, absl::Seconds(60), 5);
  w.SetRunning(0, 2);  // e.g. the controller restarts on the SXM tier
  absl::Time t = T0();
  const double conc = 80;
  std::optional<absl::Time> switched;
  for (const absl::Time end = T0() + absl::Minutes(20); t < end; t += kTick) {
    const int old_before = w.state(0).desired;
    const Decision& d = w.Step(t, {World::Sample(t, conc, 3)});
    if (!switched && d.variants[1].replicas > 0) {
      switched = t;
      EXPECT_EQ(d.variants[1].reason, ScaleReason::kTierSwitch);
      EXPECT_THAT(d.message, HasSubstr("h100-80gb-sxm -> h100-80gb-pcie"));
    }
    if (w.state(0).desired < old_before) {
      EXPECT_GE(w.state(1).ready, 2) << "old tier drained before the new "
                                        "one was ready, at "
                                     << absl::FormatDuration(t - T0());
    }
  }
  ASSERT_TRUE(switched.has_value());
  EXPECT_GE(*switched - T0(), absl::Minutes(10)) << "hysteresis";
  EXPECT_EQ(w.state(0).desired, 0);
  EXPECT_EQ(w.state(1).ready, 2);
}

// Missing or garbage metrics hold the replicas (valid = false), never lower.
TEST(DeciderTest, MissingMetricsHoldReplicas) {
  World w = OneA100();
  const absl::Time start = Steady(w, T0(), absl::Minutes(3), 80);
  const int before = w.TotalDesired();
  ASSERT_EQ(before, 2);
  bool held = false;
  absl::Time t = start;
  for (const absl::Time end = t + absl::Minutes(10); t < end; t += kTick) {
    DemandSample garbage;  // no figure at all: carries no information
    garbage.at = t;
    const Decision& d = w.Step(t, t < start + absl::Minutes(5)
                                      ? std::vector<DemandSample>{}
                                      : std::vector<DemandSample>{garbage});
    EXPECT_EQ(w.TotalDesired(), before) << d.message;
    if (t - start > absl::Seconds(31)) {
      EXPECT_FALSE(d.valid);
      EXPECT_EQ(d.reason, ScaleReason::kNoData);
      EXPECT_THAT(d.message, HasSubstr("holding"));
      held = true;
    }
  }
  EXPECT_TRUE(held);
  // Metrics return: decisions are valid again.
  w.Step(t, {World::Sample(t, 80, 3)});
  EXPECT_TRUE(w.last().valid);
}

// Partial demand (an activator's stream lost, or just after start): what
// is seen is a lower bound. Up for it, never down -- whatever it says --
// and a partial sample that sees nothing starts no idle period.
TEST(DeciderTest, PartialDemandScalesUpNeverDown) {
  struct Case {
    const char* name;
    int running;        // replicas before the partial samples
    double seen;        // in flight in the partial samples
    int want_at_least;  // desired after 5 minutes of them
    int want_at_most;
  };
  for (const Case& c : std::vector<Case>{
           {"held at zero while an activator is lost: served", 0, 1, 1, 1},
           {"low partial demand does not scale down", 2, 0.5, 2, 2},
           {"nothing seen does not go idle", 2, 0, 2, 2},
           {"more demand seen: up", 1, 80, 2, 1000},
       }) {
    SCOPED_TRACE(c.name);
    World w = OneA100();
    absl::Time t = T0();
    if (c.running > 0) {
      t = Steady(w, t, absl::Minutes(3), 40.0 * c.running);
      ASSERT_EQ(w.TotalDesired(), c.running);
    }
    for (const absl::Time end = t + absl::Minutes(5); t < end; t += kTick) {
      DemandSample partial = World::Sample(t, c.seen, 0);
      partial.partial = true;
      const Decision& d = w.Step(t, {partial});
      EXPECT_GE(w.TotalDesired(), std::min(c.running, c.want_at_least))
          << d.message;
    }
    EXPECT_GE(w.TotalDesired(), c.want_at_least) << w.last().message;
    EXPECT_LE(w.TotalDesired(), c.want_at_most) << w.last().message;
  }
}

// Saturated: every ready replica at its cap and requests held. The
// in-flight figure cannot show more than the capacity, and the held queue
// is not a backlog that drains (arrivals take each freed slot), so a
// stabilisation window that averaged lower demand must not take replicas
// away then: the target holds (Saturated) -- also when the engines' running
// count lags the requests sent them (counted as queued). The same sample
// with none queued, or with the queued ones within the free slots, is not
// saturated; being far above the stable average, it holds as rising. At
// the average the scale-down goes on.
TEST(DeciderTest, SaturatedNeverScalesDown) {
  // Four replicas busy, then the load falls to a fifth of one: the tick at
  // which the decider first scales down on the low load.
  const auto history = [](World& w, absl::Time until, double cap) {
    absl::Time t = Steady(w, T0(), absl::Minutes(3), 4 * cap);
    for (; t < until; t += kTick) {
      w.Step(t, {World::Sample(t, 0.2 * cap, 1)});
    }
    return t;
  };
  World probe = OneA100();
  probe.Step(T0(), {World::Sample(T0(), 0)});
  const double cap = probe.last().capacity_per_replica;
  ASSERT_GT(cap, 0);
  absl::Time down = history(probe, T0() + absl::Minutes(3), cap);
  ASSERT_EQ(probe.TotalDesired(), 4);
  ASSERT_EQ(probe.TotalReady(), 4);
  while (probe.TotalDesired() == 4 && down < T0() + absl::Minutes(15)) {
    down += kTick;
    probe.Step(down, {World::Sample(down, 0.2 * cap, 1)});
  }
  ASSERT_LT(probe.TotalDesired(), 4) << "the load must fall far enough";
  struct Case {
    const char* name;
    double in_flight;  // at the tick that scaled down
    double queued;
    std::optional<ScaleReason> held;  // the four stay, for this reason
  };
  for (const Case& c : std::vector<Case>{
           {"every slot busy, requests held", 4 * cap, 100,
            ScaleReason::kSaturated},
           {"every slot busy, none held", 4 * cap, 0, ScaleReason::kRising},
           {"running lags what was sent, requests held", 4 * cap - 5, 105,
            ScaleReason::kSaturated},
           {"queued within the free slots", 4 * cap - 10, 5,
            ScaleReason::kRising},
           {"at the stable average: down", 0.2 * cap, 0, std::nullopt},
       }) {
    SCOPED_TRACE(c.name);
    World w = OneA100();
    history(w, down, cap);
    ASSERT_EQ(w.TotalDesired(), 4);
    DemandSample d = World::Sample(down, c.in_flight, 1);
    d.queued = c.queued;
    const Decision& got = w.Step(down, {d});
    if (c.held) {
      EXPECT_EQ(w.TotalDesired(), 4) << got.message;
      EXPECT_EQ(got.reason, *c.held) << got.message;
      if (*c.held == ScaleReason::kRising) {
        EXPECT_THAT(got.message,
                    HasSubstr("no scale-down while demand climbs"));
      }
    } else {
      EXPECT_LT(w.TotalDesired(), 4) << got.message;
    }
  }
}

// A spec that does not validate holds with the field in the message.
TEST(DeciderTest, InvalidSpecHoldsAndNamesTheField) {
  EndpointSpec spec = Llama8b({Variant("chat", "h900")});
  World w(spec, DefaultCatalog());
  w.SetRunning(0, 3);
  const Decision& d = w.Step(T0(), {World::Sample(T0(), 10, 1)});
  EXPECT_FALSE(d.valid);
  EXPECT_EQ(d.reason, ScaleReason::kInvalidSpec);
  EXPECT_THAT(d.message, HasSubstr("variants[0].gpuClass"));
  EXPECT_EQ(d.variants[0].replicas, 3);
}

// Bounds always hold: min keeps replicas through idleness, max caps bursts.
TEST(DeciderTest, MinAndMaxBoundsHold) {
  EndpointSpec spec = Llama8b({Variant("chat", "a100-80gb")});
  spec.min_replicas = 1;
  spec.max_replicas = 3;
  World w(spec, DefaultCatalog());
  absl::Time t = Steady(w, T0(), absl::Minutes(30), 0);
  EXPECT_EQ(w.TotalDesired(), 1);
  EXPECT_EQ(w.last().reason, ScaleReason::kMinReplicas);
  Steady(w, t, absl::Minutes(2), 10000);
  EXPECT_EQ(w.TotalDesired(), 3);
  EXPECT_EQ(w.last().reason, ScaleReason::kMaxReplicas);
}

// Measured decode speed far below the model's lowers the capacity per
// replica (the correction is clamped at 0.5x).
TEST(DeciderTest, CapacityCorrectedByMeasuredThroughput) {
  // A tight TPOT SLO, so capacity is bound by decode speed, not KV memory.
  EndpointSpec spec = Llama8b({Variant("chat-a100", "a100-80gb")});
  spec.slo.tpot = absl::Milliseconds(20);
  World w(spec, DefaultCatalog());
  absl::Time t = Steady(w, T0(), absl::Minutes(3), 40);
  const int modelled = w.last().capacity_per_replica;
  for (const absl::Time end = t + absl::Minutes(3); t < end; t += kTick) {
    DemandSample d = World::Sample(t, 40, 2);
    d.output_tokens_per_s = 40 / 0.08 * 0.4;  // far slower than modelled
    w.Step(t, {d});
  }
  EXPECT_LT(w.last().capacity_per_replica, modelled);
  EXPECT_GT(w.last().capacity_per_replica, 0);
}

// The engines' own inter-token latency calibrates the serving tier: a server
// whose steps take 1.5x the model's holds what the model gives at a 1.5x
// tighter SLO, once enough tokens were seen; until then, and for nonsense
// samples, the model's capacity stands. Table-driven over explicit times.
TEST(DeciderTest, CapacityCalibratedFromEngineLatency) {
  EndpointSpec spec = Llama8b({Variant("chat-a100", "a100-80gb")});
  spec.slo.tpot = absl::Milliseconds(20);
  const model::ReplicaModel replica(
      spec.model, *DefaultCatalog().Find("a100-80gb"), 1,
      model::Precision::kBf16, model::Precision::kBf16, model::EngineTuning{});
  struct Case {
    std::string name;
    double slower;  // the server's step time / the model's
    double tokens;  // behind each sample
    bool nonsense;  // an ITL of zero
    bool calibrated;
  };
  const std::vector<Case> cases = {
      {"1.5x slower, enough tokens", 1.5, 500, false, true},
      {"1.5x slower, too few tokens", 1.5, 5, false, false},
      {"nonsense samples", 1.5, 500, true, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    World w(spec, DefaultCatalog());
    absl::Time t = Steady(w, T0(), absl::Minutes(3), 40);
    const int modelled = w.last().capacity_per_replica;
    EXPECT_EQ(w.last().model_capacity_per_replica, modelled);
    for (const absl::Time end = t + absl::Minutes(3); t < end; t += kTick) {
      DemandSample d = World::Sample(t, 40, 2);
      const double batch = *d.in_flight / std::max(1, w.TotalReady());
      EngineLatency l;
      l.itl_s = c.nonsense
                    ? 0
                    : c.slower * replica.TpotSeconds(
                                     static_cast<int>(std::lround(batch)),
                                     spec.workload);
      l.itl_tokens = c.tokens;
      d.latency = l;
      w.Step(t, {d});
    }
    const Decision& d = w.last();
    if (c.calibrated) {
      EXPECT_NEAR(d.decode_calibration, 1.5, 0.01);
      const int want = replica.MaxConcurrency(
          spec.workload, absl::ToDoubleSeconds(spec.slo.tpot) / 1.5);
      EXPECT_EQ(d.capacity_per_replica, std::max(1, want));
      EXPECT_LT(d.capacity_per_replica, modelled);
      EXPECT_THAT(d.calibration, HasSubstr("x predicted ("));
    } else {
      EXPECT_DOUBLE_EQ(d.decode_calibration, 1.0);
      EXPECT_EQ(d.capacity_per_replica, modelled);
      EXPECT_THAT(d.calibration, HasSubstr("decode uncalibrated"));
    }
    if (c.nonsense) {
      EXPECT_THAT(d.calibration, HasSubstr("samples rejected"));
    }
  }
}

// A bursty endpoint keeps a warm pool sized from its own rises.
TEST(DeciderTest, WarmPoolFromOwnRises) {
  World w = OneA100();
  absl::Time t = Steady(w, T0(), absl::Minutes(1), 1);
  const int cap = w.last().capacity_per_replica;
  bool warm_seen = false;
  for (int cycle = 0; cycle < 20; ++cycle) {
    t = Steady(w, t, absl::Minutes(3), 0.3 * cap);
    warm_seen = warm_seen || (w.last().warm_pool > 0 &&
                              w.last().reason == ScaleReason::kWarmPool);
    t = Steady(w, t, absl::Minutes(1), 1.6 * cap);
  }
  EXPECT_TRUE(warm_seen);
  // Low phase: 1 replica for the load, plus the pool for the next rise.
  t = Steady(w, t, absl::Minutes(3), 0.3 * cap);
  EXPECT_EQ(w.last().load_replicas, 1);
  EXPECT_GE(w.TotalDesired(), 2) << w.last().message;
}

// At zero a request that arrives waits in the hold; when the hold refused
// most of them, the held queue was not the demand, and the climb to the
// stream's level once replicas are ready is the recovery, not a rise of
// the endpoint's own: no warm pool from it. Held in full, the same climb
// is a burst the endpoint made, and the warm pool covers the next one.
TEST(DeciderTest, RecoveryFromAHoldThatRefusedIsNotARise) {
  struct Case {
    std::string name;
    double hold;  // requests the activator holds at most
    bool warm;
  };
  const std::vector<Case> cases = {
      {"the hold kept every request", 1e9, true},
      {"the hold refused most", 20, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    World w = OneA100();
    w.SetColdStart(0, absl::Seconds(60));
    w.Step(T0(), {World::Sample(T0(), 0)});
    absl::Time t = T0() + kTick;
    double arrived = 0;
    for (; w.TotalReady() == 0 && t < T0() + absl::Minutes(3); t += kTick) {
      arrived += 10;
      w.Step(t, {Queued(t, std::min(arrived, c.hold), 10)});
    }
    ASSERT_GT(w.TotalReady(), 0);
    const int cap = w.last().capacity_per_replica;
    ASSERT_GT(cap, 0);
    t = Steady(w, t, absl::Minutes(4), 3.0 * cap);
    EXPECT_EQ(w.last().load_replicas, 3);
    if (c.warm) {
      EXPECT_GT(w.last().warm_pool, 0) << w.last().message;
    } else {
      EXPECT_EQ(w.last().warm_pool, 0) << w.last().message;
    }
  }
}

// The warm pool covers rises the running replicas cannot absorb: with a
// target utilisation under 1 the headroom it leaves is spare too, so rises
// within the replicas' whole capacity add no warm replica.
TEST(DeciderTest, WarmPoolCountsTheTargetUtilisationsHeadroom) {
  struct Case {
    std::string name;
    double high;  // x capacity, after 0.3 x capacity
    bool warm;
  };
  const std::vector<Case> cases = {
      // 0.3 -> 0.6: within one replica's whole capacity (not within its
      // 0.5 target).
      {"within the headroom", 0.6, false},
      {"beyond it", 1.6, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DeciderConfig config;
    config.target_utilization = 0.5;
    World w(Llama8b({Variant("chat-a100", "a100-80gb")}), DefaultCatalog(),
            config);
    w.ReportColdStart(0, absl::Seconds(60), 5);
    absl::Time t = Steady(w, T0(), absl::Minutes(1), 1);
    const int cap = w.last().capacity_per_replica;
    ASSERT_GT(cap, 0);
    int warm = 0;
    for (int cycle = 0; cycle < 20; ++cycle) {
      t = Steady(w, t, absl::Minutes(3), 0.3 * cap);
      if (w.last().reason == ScaleReason::kWarmPool) {
        warm = std::max(warm, w.last().warm_pool);
      }
      t = Steady(w, t, absl::Minutes(1), c.high * cap);
    }
    EXPECT_EQ(warm > 0, c.warm) << w.last().message;
  }
}

// After a day of history, the time-of-day profile scales ahead of the
// daily 08:00 ramp one cold start before it arrives.
TEST(DeciderTest, SeasonalScaleAheadOfTheDailyRamp) {
  World w = OneA100();
  const absl::Time midnight = absl::FromUnixSeconds(1'699'920'000);  // 00:00Z
  const absl::Duration tick = absl::Seconds(10);
  int cap = 0;
  const auto level = [&](absl::Time t) {
    const absl::Duration in_day =
        (t - midnight) - absl::Floor(t - midnight, absl::Hours(24));
    return in_day >= absl::Hours(8) && in_day < absl::Hours(20) ? 3.0 : 0.5;
  };
  absl::Time t = midnight;
  w.Step(t, {World::Sample(t, 1, 1)});
  cap = w.last().capacity_per_replica;
  ASSERT_GT(cap, 0);
  // Day 1 and day 2 up to 07:59:30.
  const absl::Time before_ramp =
      midnight + absl::Hours(24 + 7) + absl::Minutes(59) + absl::Seconds(30);
  for (t += tick; t < before_ramp; t += tick) {
    w.Step(t, {World::Sample(t, level(t) * cap, 5)});
  }
  const Decision& d = w.Step(t, {World::Sample(t, 0.5 * cap, 5)});
  EXPECT_EQ(d.reason, ScaleReason::kScaleAhead) << d.message;
  EXPECT_THAT(d.message, HasSubstr("time of day"));
  EXPECT_GE(d.load_replicas, 2) << d.message;  // 1 replica holds 0.5 x cap
}

// A tier that cannot serve the forecast within max replicas is left at
// once (no 10-minute hysteresis), still make-before-break.
TEST(DeciderTest, TierSwitchAtOnceWhenTheTierCannotMeetTheSlo) {
  EndpointSpec spec =
      Llama8b({Variant("chat-l40s", "l40s"), Variant("chat-h200", "h200")});
  spec.max_replicas = 2;
  World w(spec, DefaultCatalog());
  w.ReportColdStart(0, absl::Seconds(60), 5);
  w.ReportColdStart(1, absl::Seconds(60), 5);
  w.SetRunning(0, 2);
  // Capacities from the sizing model: H200 holds more sequences than L40S.
  const model::Catalog catalog = DefaultCatalog();
  const model::ReplicaModel l40s(spec.model, *catalog.Find("l40s"), 1,
                                 model::Precision::kBf16,
                                 model::Precision::kBf16, {});
  const model::ReplicaModel h200(spec.model, *catalog.Find("h200"), 1,
                                 model::Precision::kBf16,
                                 model::Precision::kBf16, {});
  const double slo = 0.08;
  const int cap_l40s = l40s.MaxConcurrency(spec.workload, slo);
  const int cap_h200 = h200.MaxConcurrency(spec.workload, slo);
  ASSERT_GT(cap_h200, cap_l40s);
  const double demand = 2 * cap_l40s + 0.5 * (2 * cap_h200 - 2 * cap_l40s);
  absl::Time t = T0();
  std::optional<absl::Time> switched;
  for (const absl::Time end = T0() + absl::Minutes(3); t < end; t += kTick) {
    const Decision& d = w.Step(t, {World::Sample(t, demand, 5)});
    if (!switched && d.variants[1].replicas > 0) {
      switched = t;
      EXPECT_THAT(d.message, HasSubstr("cannot meet the SLO"));
      EXPECT_EQ(d.variants[0].replicas, 2);  // the old keeps serving
    }
  }
  ASSERT_TRUE(switched.has_value());
  EXPECT_LT(*switched - T0(), absl::Seconds(10));
  EXPECT_EQ(w.state(0).desired, 0);
  EXPECT_GE(w.state(1).ready, 1);
}

// A server that is not an LLM (or was load-tested) states its own
// per-replica concurrency; the decider sizes with it.
TEST(DeciderTest, ConcurrencyPerReplicaOverride) {
  EndpointSpec spec = Llama8b({Variant("sd", "l40s")});
  spec.concurrency_per_replica = 1;
  World w(spec, DefaultCatalog());
  const Decision& d = w.Step(T0(), {World::Sample(T0(), 3, 3)});
  EXPECT_EQ(d.capacity_per_replica, 1);
  EXPECT_EQ(d.variants[0].replicas, 3);
}

// The Knative preset is the KPA's documented defaults.
TEST(DeciderTest, KnativePresetIsKpaDefaults) {
  const DeciderConfig k = DeciderConfig::Knative();
  EXPECT_EQ(k.stable_window, absl::Seconds(60));
  EXPECT_EQ(k.panic_window, absl::Seconds(6));
  EXPECT_DOUBLE_EQ(k.panic_threshold, 2.0);
  EXPECT_DOUBLE_EQ(k.target_utilization, 0.7);
  EXPECT_DOUBLE_EQ(k.max_scale_down_rate, 2.0);
}

// Per-endpoint state stays under the 8 KiB budget.
TEST(DeciderTest, StateIsSmall) {
  World w = OneA100();
  Steady(w, T0(), absl::Minutes(30), 50);
  EXPECT_LT(w.decider().StateBytes(), 8u * 1024u);
}

}  // namespace
}  // namespace pilotlight::policy

namespace pilotlight::policy {
namespace {

// Rule 6's learned hold: bursts that need 3 replicas every 5 minutes (a
// steady 1 between them). The first few bursts the extra replicas leave
// after max(60 s, the cold start) and are started again for the next one;
// with each burst's re-need the hold grows until it covers the 5-minute gap
// and the later bursts find them running. Bursts 40 minutes apart -- beyond
// the hold's 30-minute reach -- keep the short hold: the extras are not
// worth keeping.
TEST(DeciderTest, LearnedHoldKeepsReplicasNeededAgainSoon) {
  for (const absl::Duration every : {absl::Minutes(5), absl::Minutes(40)}) {
    SCOPED_TRACE(absl::FormatDuration(every));
    World w = OneA100();
    absl::Time t = Steady(w, T0(), absl::Minutes(2), 5);
    const int cap = w.last().capacity_per_replica;
    ASSERT_GT(cap, 0);
    std::vector<int> lowest_between;  // per gap, the fewest replicas asked
    for (int burst = 0; burst < 12; ++burst) {
      t = Steady(w, t, absl::Seconds(40), 2.5 * cap);
      int lowest = w.TotalDesired();
      const absl::Time gap_start = t;
      for (const absl::Time end = t + every - absl::Seconds(40); t < end;
           t += kTick) {
        const Decision& d = w.Step(t, {World::Sample(t, 5, 1)});
        lowest = std::min(lowest, w.TotalDesired());
        if (every == absl::Minutes(5) && burst >= 8 &&
            t - gap_start > absl::Minutes(2) + absl::Seconds(30)) {
          // Learned: held through the gap, and the message says why.
          EXPECT_EQ(d.reason, ScaleReason::kScaleDownHeld) << d.message;
          EXPECT_THAT(d.message, HasSubstr("(learned"));
        }
      }
      lowest_between.push_back(lowest);
    }
    // Early gaps: the extras leave.
    EXPECT_LE(lowest_between[0], 2);
    if (every == absl::Minutes(5)) {
      for (size_t b = 8; b < lowest_between.size(); ++b) {
        EXPECT_GE(lowest_between[b], 3) << "gap after burst " << b;
      }
    } else {
      for (int lowest : lowest_between) {
        EXPECT_LE(lowest, 2);
      }
    }
  }
}

// The learned hold grows with its evidence, one step per burst: bursts of
// 3 replicas (levels 2 and 3 dropped and needed again together) every 5
// minutes. Per gap, how long the third replica stays after the burst: the
// short hold after the first burst, a fifth of the learned span more after
// each burst that re-needed it -- the two levels one burst re-needs count
// once -- until it spans the gap (here from the fourth: four fifths of the
// 5-minute bin the gaps fall in). Counted per level, two re-needs a burst,
// the hold jumped from the short one to its full span at the third.
TEST(DeciderTest, LearnedHoldGrowsAFifthPerBurstThatNeededItAgain) {
  World w = OneA100();
  absl::Time t = Steady(w, T0(), absl::Minutes(2), 5);
  const int cap = w.last().capacity_per_replica;
  ASSERT_GT(cap, 0);
  const absl::Duration kGap = absl::Minutes(5) - absl::Seconds(40);
  std::vector<absl::Duration> kept;  // per gap: 3 replicas kept this long
  for (int burst = 0; burst < 8; ++burst) {
    t = Steady(w, t, absl::Seconds(40), 2.5 * cap);
    ASSERT_GE(w.TotalDesired(), 3) << w.last().message;
    const absl::Time end = t;
    absl::Duration held = kGap;
    for (; t < end + kGap; t += kTick) {
      w.Step(t, {World::Sample(t, 5, 1)});
      if (held == kGap && w.TotalDesired() < 3) held = t - end;
    }
    kept.push_back(held);
  }
  std::string all;
  for (const absl::Duration d : kept) {
    absl::StrAppend(&all, " ", absl::FormatDuration(d));
  }
  SCOPED_TRACE(absl::StrCat("kept:", all));
  // No evidence or one fifth: the stabilisation window and the cold start
  // (60 s each here) are the longer holds. Then a step a burst, until the
  // hold spans the gap.
  EXPECT_EQ(kept[0], kept[1]);
  EXPECT_LT(kept[1], kept[2]);
  const absl::Duration step = kept[3] - kept[2];
  EXPECT_GE(step, absl::Seconds(30));
  EXPECT_LE(step, absl::Seconds(75));
  EXPECT_LT(kept[3], kGap);  // three fifths: still released
  for (size_t g = 4; g < kept.size(); ++g) {
    EXPECT_EQ(kept[g], kGap) << "gap after burst " << g;
  }
}

}  // namespace
}  // namespace pilotlight::policy

namespace pilotlight::policy {
namespace {

// Hourly billing: a replica is released only in the last minute of an
// hour it has paid for. Two replicas' load for 5 minutes, then one's for
// 5, then nothing: the second stays until 60 min after it started, the
// first until its hour ends (past its keep-alive); with per-second billing
// both leave as soon as the rules allow.
TEST(DeciderTest, HourlyBillingReleasesOnlyAtThePaidHoursEnd) {
  for (const bool from_class : {false, true})
    for (const absl::Duration billing : {absl::Seconds(1), absl::Hours(1)}) {
      // The controller's --billing-granularity, or the variant's GPUClass's
      // billingGranularitySeconds over a controller billing per second.
      SCOPED_TRACE(absl::StrCat(absl::FormatDuration(billing),
                                from_class ? " from the GPUClass" : ""));
      DeciderConfig config;
      EndpointSpec spec = Llama8b({Variant("chat-a100", "a100-80gb")});
      if (from_class) {
        spec.variants[0].billing_granularity = billing;
      } else {
        config.billing_granularity = billing;
      }
      World w(spec, DefaultCatalog(), config);
      w.ReportColdStart(0, absl::Seconds(60), 5);
      absl::Time t = Steady(w, T0(), absl::Seconds(10), 5);
      const int cap = w.last().capacity_per_replica;
      const absl::Time first_up = T0();
      t = Steady(w, t, absl::Minutes(5), 1.5 * cap);
      ASSERT_GE(w.TotalDesired(), 2);  // (the warm pool may add one)
      t = Steady(w, t, absl::Minutes(5), 5);
      std::optional<absl::Time> second_down;
      std::optional<absl::Time> zero_at;
      for (; t < T0() + absl::Hours(2); t += kTick) {
        const Decision& d = w.Step(t, {World::Sample(t, 0)});
        if (!second_down && w.TotalDesired() <= 1) {
          second_down = t;
        }
        if (!zero_at && w.TotalDesired() == 0) {
          zero_at = t;
        }
        if (billing == absl::Hours(1) && w.TotalDesired() >= 2 &&
            t > T0() + absl::Minutes(20)) {
          // The extras, idle for 10+ minutes, kept by the billing rule alone.
          EXPECT_THAT(d.message, HasSubstr("billing: kept until its paid"));
        }
      }
      ASSERT_TRUE(second_down.has_value());
      if (billing == absl::Hours(1)) {
        // The extras started within the first 6 minutes: each released in
        // the minute before its hour ends. The first, when its keep-alive
        // ends, goes only in the last minute of one of its hours.
        EXPECT_GE(*second_down, first_up + absl::Minutes(59));
        EXPECT_LT(*second_down, first_up + absl::Minutes(66));
        if (zero_at) {
          const absl::Duration into = (*zero_at - first_up) % absl::Hours(1);
          EXPECT_GE(into, absl::Minutes(59)) << absl::FormatTime(*zero_at);
        }
      } else {
        EXPECT_LT(*second_down, first_up + absl::Minutes(15));
      }
    }
}

}  // namespace
}  // namespace pilotlight::policy
