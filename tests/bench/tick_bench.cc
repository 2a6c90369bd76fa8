// tick_bench: the controller's tick at N endpoints, with the counterfactual
// replays (status.counterfactual) off and then on, in one run: does the
// replayer's thread, at its CPU budget, slow the tick?
//
// In process, against fakes (tests/fakes: the informers' caches, no API
// server): N endpoints of the re-tuning benches' traffic mix
// (traffic_mix.h: a tenth busy, three tenths moderate, six tenths sparse),
// each a Deployment of llama-3.1-8b on a100 already at the replicas its
// traffic needs. The demand source hands each endpoint a fresh sample every
// tick (Poisson arrivals of its class), so every reconcile decides, as the
// controller does with Prometheus read once a tick.
//
//   1. Warm-up, on a fake clock: ticks until the endpoints' traffic records
//      hold the hour a replay needs (the first table comes at 60 min).
//   2. Off: `--ticks` ticks, paced `--pace` apart in real time (the
//      controller's 2 s), each reconciling every endpoint on `--workers`
//      threads as the controller's workers do; its wall time is the tick's.
//   3. On: the replayer attached (CounterfactualOptions' defaults: its own
//      thread, half a core). One unmeasured tick hands it every endpoint's
//      record (a controller spreads these over its 10 minutes; here they
//      come at once, so the replayer is busy for the whole phase), then
//      `--ticks` measured ticks as in 2.
//   4. Off again, to tell the replayer's effect from the machine's drift.
//
// The writers accept every write; the /scale patches reach the fakes between
// ticks (pods start and are Ready 20 s later), so the reconciles run on
// many threads over caches nobody writes meanwhile. Prints each phase's
// tick wall time (p50 / p99 / max) and the workers' CPU a tick, and what
// the replayer did meanwhile.
//
// Usage: tick_bench [--endpoints N] [--ticks K] [--pace SECONDS]
//                   [--workers W]                 (default 2000, 30, 2, 2)
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "controller/api/resources.h"
#include "controller/base/json_fields.h"
#include "controller/model/catalog.h"
#include "controller/process/thread_cpu.h"
#include "controller/runtime/counterfactuals.h"
#include "controller/runtime/metrics.h"
#include "controller/runtime/reconciler.h"
#include "prometheus/registry.h"
#include "tests/bench/traffic_mix.h"
#include "tests/fakes/fake_cluster.h"
#include "tests/kube/fake_clock.h"

namespace pilotlight::bench {
namespace {

using fakes::json;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);
constexpr absl::Duration kTick = absl::Seconds(2);
// A replay needs an hour of record (docs/policy.md): a little more.
constexpr absl::Duration kWarmup = absl::Minutes(62);

// Endpoint i's traffic class: the mix's shares, interleaved.
const TrafficClass& ClassOf(int i) {
  const int tenth = i % 10;
  return tenth == 0   ? kTrafficMix[0]
         : tenth <= 3 ? kTrafficMix[1]
                      : kTrafficMix[2];
}

std::string Name(int i) { return absl::StrCat("ep-", i); }

// Every endpoint's sample, fresh each tick: arrivals of its class in the
// tick (Poisson, drawn from the endpoint and the tick alone, so any thread
// may read any endpoint), in flight by Little's law at 2 s a request.
class MixDemand final : public runtime::DemandSource {
 public:
  void NextEpoch() { ++epoch_; }
  int64_t Epoch(const std::string& /*endpoint*/) const override {
    return epoch_.load();
  }
  policy::DemandSample Read(const api::AutoscalerResource& endpoint,
                            const std::vector<std::string>& /*ready_pods*/,
                            absl::Time now, std::string& /*missing*/) override {
    int i = 0;
    (void)absl::SimpleAtoi(endpoint.name.substr(3), &i);
    std::mt19937_64 rng((static_cast<uint64_t>(i) << 32) ^
                        static_cast<uint64_t>(epoch_.load()));
    const double mean = ClassOf(i).rate * absl::ToDoubleSeconds(kTick);
    const double arrivals =
        static_cast<double>(std::poisson_distribution<int>(mean)(rng));
    policy::DemandSample s;
    s.at = now;
    s.arrivals = arrivals;
    s.in_flight = arrivals;  // 2 s each, over a 2 s tick
    s.queued = 0.0;
    return s;
  }

 private:
  std::atomic<int64_t> epoch_{0};
};

// Accepts every write; keeps the /scale patches, which the bench applies
// to the fakes between ticks, and drops the rest.
class PatchKeeper final : public runtime::ReplicaPatcher,
                          public runtime::StatusWriter,
                          public runtime::EventRecorder {
 public:
  absl::Status Scale(const std::string& ns, const std::string& deployment,
                     int32_t replicas) override {
    patches.emplace_back(absl::StrCat(ns, "/", deployment), replicas);
    return absl::OkStatus();
  }
  absl::Status SetDeletionCost(const std::string&, const std::string&,
                               int32_t) override {
    return absl::OkStatus();
  }
  absl::Status GuardFromDisruption(const std::string&, const std::string&,
                                   bool) override {
    return absl::OkStatus();
  }
  absl::Status MarkLeaving(const std::string&, const std::string&,
                           const std::string&) override {
    return absl::OkStatus();
  }
  absl::Status PatchStatus(const std::string&, const std::string&,
                           const json&) override {
    return absl::OkStatus();
  }
  void Record(const runtime::EventSubject&, const std::string&,
              const std::string&, const std::string&) override {}
  runtime::Writers writers() { return {*this, *this, *this}; }

  std::vector<std::pair<std::string, int>> patches;
};

struct Options {
  int endpoints = 2000;
  int ticks = 30;
  double pace_s = 2;
  int workers = 2;
};

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o), clock_(kT0), metrics_(registry_) {
    static const model::Catalog catalog = *model::Catalog::Default();
    const json gc = api::GpuClassObject(*catalog.Find("a100-80gb"),
                                        policy::CapacityType::kOnDemand);
    const std::string gpu_class = StringField(gc, {"metadata", "name"});
    cluster_.PutGpuClass(gc);
    const std::map<std::string, std::string> sel = {{"pool", "a100"}};
    cluster_.AddNode("node-a100", sel, 8 * o.endpoints);
    for (int i = 0; i < o.endpoints; ++i) {
      // The replicas its traffic needs: a busy endpoint two, a moderate
      // one one, a sparse one none.
      const int replicas = ClassOf(i).rate >= 10 ? 2 : ClassOf(i).rate >= 0.1;
      cluster_.AddDeployment("ml", Name(i), replicas, sel, absl::Seconds(20));
      cluster_.PutAutoscaler(
          {{"metadata", {{"namespace", "ml"}, {"name", Name(i)}}},
           {"spec",
            {{"model", {{"preset", "llama-3.1-8b"}}},
             {"variants", json::array({{{"deployment", Name(i)},
                                        {"gpuClass", gpu_class}}})}}}});
      keys_.push_back(absl::StrCat("ml/", Name(i)));
    }
    cluster_.Settle(clock_.Now());
    cluster_.Settle(clock_.Now() + absl::Seconds(20));
    reconciler_ = std::make_unique<runtime::Reconciler>(
        policy::DeciderConfig{},
        runtime::ReconcilerInputs{cluster_.autoscalers, cluster_.deployments,
                                  cluster_.pods, cluster_.index,
                                  cluster_.gpu_classes, demand_},
        clock_, metrics_);
  }

  // Fake-clock ticks until the records hold what a replay needs.
  void WarmUp() {
    const absl::Time until = clock_.Now() + kWarmup;
    const absl::Time start = absl::Now();
    while (clock_.Now() < until) {
      Tick();
    }
    std::printf("warm-up: %lld min of ticks on the fake clock in %.1f s\n",
                static_cast<long long>(absl::ToInt64Minutes(kWarmup)),
                absl::ToDoubleSeconds(absl::Now() - start));
  }

  void Attach(runtime::CounterfactualReplayer* replayer) {
    reconciler_->set_counterfactuals(replayer);
  }

  // `ticks` ticks paced o_.pace_s apart in real time; their wall times.
  std::vector<double> Measure(int ticks) {
    std::vector<double> ms;
    for (int k = 0; k < ticks; ++k) {
      const absl::Time start = absl::Now();
      ms.push_back(Tick());
      absl::SleepFor(absl::Seconds(o_.pace_s) - (absl::Now() - start));
    }
    return ms;
  }

  // One tick: a new demand epoch, every endpoint reconciled on the workers
  // (each takes the next key, as from the controller's queue), the fake
  // clock a tick on. Returns the reconciles' wall time, ms.
  double Tick() {
    const absl::Time start = absl::Now();
    demand_.NextEpoch();
    std::atomic<size_t> next{0};
    std::atomic<int> failed{0};
    std::vector<PatchKeeper> out(static_cast<size_t>(o_.workers));
    std::atomic<double> cpu{0};
    const auto work = [&](PatchKeeper& keeper) {
      const double cpu0 = process::ThreadCpuSeconds();
      runtime::Writers w = keeper.writers();
      for (size_t i = next++; i < keys_.size(); i = next++) {
        if (!reconciler_->Reconcile(keys_[i], w, true).ok()) {
          ++failed;
        }
      }
      double cur = cpu.load();
      const double mine = process::ThreadCpuSeconds() - cpu0;
      while (!cpu.compare_exchange_weak(cur, cur + mine)) {
      }
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < out.size(); ++t) {
      threads.emplace_back(work, std::ref(out[t]));
    }
    work(out[0]);
    for (std::thread& t : threads) {
      t.join();
    }
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    cpu_ms_.push_back(cpu.load() * 1000);
    if (failed > 0) {
      std::fprintf(stderr, "tick_bench: %d reconciles failed\n", failed.load());
      std::exit(1);
    }
    // The cluster follows, between ticks (its informers' updates are not
    // the tick's work).
    for (const PatchKeeper& k : out) {
      for (const auto& [deployment, replicas] : k.patches) {
        cluster_.SetReplicas(deployment, replicas);
      }
    }
    clock_.Advance(kTick);
    cluster_.Settle(clock_.Now());
    return ms;
  }

 private:
  Options o_;
  kube::FakeClock clock_;
  fakes::FakeCluster cluster_;
  MixDemand demand_;
  prometheus::Registry registry_;
  runtime::Metrics metrics_;
  std::unique_ptr<runtime::Reconciler> reconciler_;
  std::vector<std::string> keys_;

 public:
  // The workers' CPU of each tick since the last call, ms.
  std::vector<double> TakeCpu() { return std::exchange(cpu_ms_, {}); }

 private:
  std::vector<double> cpu_ms_;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto k = static_cast<size_t>(
      std::min<double>(static_cast<double>(v.size()) - 1,
                       std::ceil(q * static_cast<double>(v.size())) - 1));
  return v[k];
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) {
    sum += x;
  }
  return sum / static_cast<double>(v.size());
}

// A phase's ticks: wall time p50 / p99 / max, and the workers' CPU.
void Print(const char* phase, const std::vector<double>& ms,
           const std::vector<double>& cpu_ms) {
  std::printf("%-28s %8.1f %8.1f %8.1f %10.1f\n", phase, Percentile(ms, 0.5),
              Percentile(ms, 0.99), *std::max_element(ms.begin(), ms.end()),
              Mean(cpu_ms));
}

int Run(const Options& o) {
  std::printf(
      "tick_bench: %d endpoints (traffic_mix.h), %d worker thread(s), %d "
      "ticks a phase paced %.1f s apart\n",
      o.endpoints, o.workers, o.ticks, o.pace_s);
  Bench bench(o);
  bench.WarmUp();
  std::printf("%-28s %8s %8s %8s %10s\n", "PHASE (a tick, ms)", "P50", "P99",
              "MAX", "CPU-MEAN");
  (void)bench.TakeCpu();
  std::vector<double> off = bench.Measure(o.ticks);
  Print("replays off", off, bench.TakeCpu());

  std::atomic<int> replays{0};
  std::atomic<double> cpu{0};
  runtime::CounterfactualOptions options;
  options.on_replay = [&](double c) {
    ++replays;
    double cur = cpu.load();
    while (!cpu.compare_exchange_weak(cur, cur + c)) {
    }
  };
  {
    runtime::CounterfactualReplayer replayer(options);
    bench.Attach(&replayer);
    bench.Measure(1);  // hands the replayer every record
    (void)bench.TakeCpu();
    const absl::Time start = absl::Now();
    const std::vector<double> on = bench.Measure(o.ticks);
    const double secs = absl::ToDoubleSeconds(absl::Now() - start);
    Print("replays on (replayer busy)", on, bench.TakeCpu());
    std::printf(
        "  meanwhile the replayer: %d replays, %.1f CPU-s in %.0f s (%.2f "
        "cores; budget %.2f)\n",
        replays.load(), cpu.load(), secs, cpu.load() / secs,
        options.cpu_budget);
    bench.Attach(nullptr);
  }
  off = bench.Measure(o.ticks);
  Print("replays off again", off, bench.TakeCpu());
  return 0;
}

}  // namespace
}  // namespace pilotlight::bench

int main(int argc, char** argv) {
  pilotlight::bench::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--endpoints") {
      o.endpoints = std::atoi(v);
    } else if (flag == "--ticks") {
      o.ticks = std::atoi(v);
    } else if (flag == "--pace") {
      o.pace_s = std::atof(v);
    } else if (flag == "--workers") {
      o.workers = std::atoi(v);
    } else {
      std::fprintf(stderr, "tick_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (o.endpoints < 1 || o.ticks < 1 || o.workers < 1 || o.pace_s < 0) {
    std::fprintf(stderr, "tick_bench: bad flags\n");
    return 2;
  }
  return pilotlight::bench::Run(o);
}
