// The replay of an endpoint's recorded traffic through other policies:
// what it says for a record of steady traffic, what it says when the
// record cannot support a replay, and the thread that runs it.
#include "controller/runtime/counterfactuals.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/one_variant_config.h"

namespace pilotlight::runtime {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

// Looked at every 2 s for `minutes`; Poisson arrivals at `rate` a second
// for the first 3 minutes of every 15, none in between.
CounterfactualJob Job(double minutes, double rate) {
  static const model::Catalog catalog = *model::Catalog::Default();
  const sim::SimConfig c = sim::OneVariantConfig(catalog);
  CounterfactualJob job;
  job.key = "ml/chat";
  job.spec = c.spec;
  job.catalog = std::make_shared<const model::Catalog>(catalog);
  job.cold_start = absl::Seconds(40);
  job.replicas.Record(kT0, {1});
  std::mt19937_64 rng(5);
  std::poisson_distribution<int64_t> arrivals(2 * rate);
  for (int k = 0; k <= minutes * 30; ++k) {
    const bool on = (k * 2) % 900 < 180;
    job.record.Add(kT0 + absl::Seconds(2 * k),
                   k == 0 || !on ? 0 : arrivals(rng));
  }
  return job;
}

const CounterfactualRow* Row(const Counterfactual& c, const std::string& p,
                             double knob) {
  for (const CounterfactualRow& r : c.rows) {
    if (r.policy == p && r.knob == knob) {
      return &r;
    }
  }
  return nullptr;
}

TEST(CounterfactualsTest, BurstyTrafficPricesEveryCandidate) {
  CounterfactualJob job = Job(120, 1.0);
  job.target_utilization = 0.9;
  const Counterfactual c = CounterfactualReplayer::Replay(
      job, CounterfactualOptions::DefaultReplay());
  ASSERT_EQ(c.rows.size(), 12U) << c.note;
  EXPECT_TRUE(c.note.empty());
  // The first is pilotlight as the controller runs it.
  EXPECT_EQ(c.rows[0].policy, "pilotlight");
  EXPECT_EQ(c.rows[0].knob, 0.9);
  EXPECT_TRUE(c.rows[0].running);
  EXPECT_FALSE(c.rows[1].running);
  EXPECT_EQ(c.at, kT0 + absl::Minutes(120));
  EXPECT_LE(c.window, absl::Minutes(120));
  EXPECT_GT(c.window - c.warmup, absl::Minutes(30));
  EXPECT_GT(c.requests, 200);
  for (const CounterfactualRow& r : c.rows) {
    EXPECT_GT(r.cost_per_hour, 0) << r.policy << " " << r.knob;
    EXPECT_GT(r.attainment, 0.5) << r.policy << " " << r.knob;
    EXPECT_LE(r.attainment, 1.0);
    EXPECT_GE(r.cold, 0.0);
  }
  // Idle 12 minutes in 15: a 1-minute keep-alive lets the replica go
  // between bursts and meets a cold start at each; a 20-minute one keeps
  // it. (An hour's is longer than the warm-up rebuilds.)
  const CounterfactualRow* k1 = Row(c, "keepalive-10m", 1);
  const CounterfactualRow* k20 = Row(c, "keepalive-10m", 20);
  const CounterfactualRow* k60 = Row(c, "keepalive-10m", 60);
  ASSERT_TRUE(k1 && k20 && k60);
  EXPECT_LT(k1->cost_per_hour, 0.5 * k20->cost_per_hour);
  EXPECT_GT(k1->cold, 0.0);
  EXPECT_EQ(k20->cold, 0.0);
  EXPECT_TRUE(k20->eligible);
  EXPECT_FALSE(k60->eligible);
  const nlohmann::json j = CounterfactualJson(c);
  EXPECT_EQ(j["candidates"].size(), 12U);
  EXPECT_EQ(j["candidates"][0]["running"], true);
  EXPECT_EQ(j["requests"], c.requests);
}

// What explain, the metrics, the Event and the alert read: the cheapest
// row replayed as it runs at the running one's attainment and cold share
// or better.
TEST(CounterfactualsTest, CheaperAsGoodIsTheCheapestThatDidAsWell) {
  Counterfactual c;
  c.rows = {{"pilotlight", 1, 3.4328, 0.995, 0.004, true, true},
            // As good and cheaper.
            {"keepalive-10m", 5, 2.1, 0.996, 0.004, true, false},
            // Cheaper still, but a lower attainment.
            {"keepalive-10m", 1, 1.2, 0.994, 0.004, true, false},
            // Cheaper, but more cold starts.
            {"keepalive-10m", 2, 1.5, 0.999, 0.005, true, false},
            // Cheapest and best, but not replayed as it runs.
            {"keepalive-10m", 60, 1.0, 1, 0, false, false},
            // As good, dearer than the 5-minute one.
            {"knative", 0.7, 2.5, 0.999, 0.001, true, false}};
  EXPECT_EQ(CheaperAsGood(c), 1U);
  const nlohmann::json j = CounterfactualJson(c);
  EXPECT_EQ(j["cheaper"]["name"], "keep-alive 5 min");
  EXPECT_EQ(j["cheaper"]["costPerHour"], 2.1);
  EXPECT_EQ(j["cheaper"]["saving"], 0.3883);
  EXPECT_EQ(j["candidates"][5]["name"], "knative at 0.7");
  // Without it, the Knative row; without that, none.
  c.rows.erase(c.rows.begin() + 1);
  EXPECT_EQ(CheaperAsGood(c), 4U);
  c.rows.pop_back();
  EXPECT_EQ(CheaperAsGood(c), std::nullopt);
  EXPECT_TRUE(CounterfactualJson(c)["cheaper"].is_null());
  // Nothing runs (a table without its running row): nothing to compare.
  c.rows[0].running = false;
  c.rows.push_back({"knative", 0.7, 0.1, 1, 0, true, false});
  EXPECT_EQ(CheaperAsGood(c), std::nullopt);
}

TEST(CounterfactualsTest, ARecordThatCannotSupportAReplaySaysWhy) {
  const sim::RetuneOptions o = CounterfactualOptions::DefaultReplay();
  const Counterfactual short_record =
      CounterfactualReplayer::Replay(Job(10, 1.0), o);
  EXPECT_TRUE(short_record.rows.empty());
  EXPECT_THAT(short_record.note,
              HasSubstr("10 min of unbroken history; a replay needs 30 min"));
  // Two hours, a handful of requests: too few to tell candidates apart.
  const Counterfactual sparse =
      CounterfactualReplayer::Replay(Job(120, 0.0005), o);
  EXPECT_TRUE(sparse.rows.empty());
  EXPECT_THAT(sparse.note, HasSubstr("too little to replay"));
  CounterfactualJob none;
  none.key = "ml/none";
  EXPECT_THAT(CounterfactualReplayer::Replay(none, o).note,
              HasSubstr("no traffic recorded yet"));
  EXPECT_TRUE(
      CounterfactualJson(CounterfactualReplayer::Replay(none, o))["time"]
          .is_null());
}

// On its own thread: a submitted replay shows up in Latest; Forget drops
// it. And below the caller's: the replaying thread runs only on CPU time
// nothing else wants (SCHED_IDLE; nice 19 where that is refused).
TEST(CounterfactualsTest, ReplaysOffTheCallersThreadAtTheLowestPriority) {
  CounterfactualOptions o;
  o.cpu_budget = 1.0;
  std::atomic<int> replays = 0;
  std::atomic<bool> caller = false;
  std::atomic<bool> idle = false;
  const std::thread::id me = std::this_thread::get_id();
  o.on_replay = [&](double cpu) {
    EXPECT_GT(cpu, 0);
    caller = std::this_thread::get_id() == me;
    idle = ::sched_getscheduler(0) == SCHED_IDLE ||
           ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())) == 19;
    ++replays;
  };
  CounterfactualReplayer replayer(o);
  replayer.Submit(Job(60, 1.0));
  std::optional<Counterfactual> c;
  for (int i = 0; i < 600 && !c; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    c = replayer.Latest("ml/chat");
  }
  ASSERT_TRUE(c) << "no replay within 60 s";
  EXPECT_EQ(c->rows.size(), 12U) << c->note;
  EXPECT_EQ(replays, 1);
  EXPECT_FALSE(caller);
  EXPECT_TRUE(idle);
  EXPECT_NE(::sched_getscheduler(0), SCHED_IDLE) << "the caller's is its own";
  replayer.Forget("ml/chat");
  EXPECT_FALSE(replayer.Latest("ml/chat"));
  EXPECT_FALSE(replayer.Latest("ml/other"));
}

}  // namespace
}  // namespace pilotlight::runtime
