#include "controller/runtime/counterfactuals.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/base/json_fields.h"
#include "controller/process/log.h"
#include "controller/process/thread_cpu.h"
#include "controller/process/thread_priority.h"
#include "controller/sim/simulator.h"

namespace pilotlight::runtime {

namespace {

using json = nlohmann::json;

std::string Minutes(absl::Duration d) {
  return absl::StrCat(absl::ToInt64Minutes(d), " min");
}

}  // namespace

sim::RetuneOptions CounterfactualOptions::DefaultReplay() {
  sim::RetuneOptions o;
  o.candidates = sim::DefaultRetuneCandidates();
  // The last two hours at most (enough to rebuild an hour's keep-alive and
  // measure the hour after), and 100,000 requests (a busy endpoint's last
  // hour): a bounded CPU per endpoint (tests/bench/retune_bench.cc).
  o.max_replayed_window = absl::Hours(2);
  o.max_replayed_requests = 100000;
  return o;
}

CounterfactualReplayer::CounterfactualReplayer(CounterfactualOptions options)
    : options_(std::move(options)) {
  if (!options_.synchronous) {
    thread_ = std::thread([this] { Loop(); });
  }
}

CounterfactualReplayer::~CounterfactualReplayer() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void CounterfactualReplayer::Submit(CounterfactualJob job) {
  if (options_.synchronous) {
    double cpu = 0;
    Counterfactual c = TimedReplay(job, cpu);
    const std::lock_guard<std::mutex> lock(mu_);
    latest_[job.key] = std::move(c);
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(mu_);
    forgotten_.erase(job.key);
    const auto same = std::find_if(
        queue_.begin(), queue_.end(),
        [&](const CounterfactualJob& q) { return q.key == job.key; });
    if (same != queue_.end()) {
      *same = std::move(job);
    } else {
      queue_.push_back(std::move(job));
    }
  }
  cv_.notify_one();
}

std::optional<Counterfactual> CounterfactualReplayer::Latest(
    const std::string& key) const {
  const std::lock_guard<std::mutex> lock(mu_);
  const auto it = latest_.find(key);
  if (it == latest_.end()) {
    return std::nullopt;
  }
  return it->second;
}

void CounterfactualReplayer::Forget(const std::string& key) {
  const std::lock_guard<std::mutex> lock(mu_);
  latest_.erase(key);
  std::erase_if(queue_,
                [&](const CounterfactualJob& q) { return q.key == key; });
  forgotten_.insert(key);
}

Counterfactual CounterfactualReplayer::TimedReplay(const CounterfactualJob& job,
                                                   double& cpu) const {
  const double start = process::ThreadCpuSeconds();
  Counterfactual c = Replay(job, options_.replay);
  cpu = process::ThreadCpuSeconds() - start;
  if (options_.on_replay) {
    options_.on_replay(cpu);
  }
  return c;
}

void CounterfactualReplayer::Loop() {
  // Below the workers: a tick's reconciles go first. At the workers'
  // priority, half a core of replays lengthens a tick on a small machine
  // (tests/bench/tick_bench.cc).
  const std::string priority = process::RunWhenIdle();
  process::LogJson(priority.empty() ? "warn" : "info",
                   "counterfactual replays on their own thread",
                   {{"priority", priority.empty() ? "unchanged (the OS refused "
                                                    "SCHED_IDLE and nice 19)"
                                                  : priority},
                    {"cpu_budget_cores", options_.cpu_budget}});
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) {
      return;
    }
    const CounterfactualJob job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    double cpu = 0;
    Counterfactual c = TimedReplay(job, cpu);
    lock.lock();
    if (forgotten_.erase(job.key) == 0) {
      latest_[job.key] = std::move(c);
    }
    // The CPU budget: idle in proportion to what the replay took.
    const double budget = std::clamp(options_.cpu_budget, 0.01, 1.0);
    const absl::Duration rest = absl::Seconds(cpu * (1 / budget - 1));
    cv_.wait_for(lock, absl::ToChronoNanoseconds(rest), [&] { return stop_; });
    if (stop_) {
      return;
    }
  }
}

Counterfactual CounterfactualReplayer::Replay(
    const CounterfactualJob& job, const sim::RetuneOptions& options) {
  Counterfactual out;
  const sim::TrafficRecord& record = job.record;
  out.at = record.covered_since() + record.Covered();
  if (record.covered_since() == absl::InfinitePast() || !job.catalog ||
      job.spec.variants.empty()) {
    out.note = "no traffic recorded yet";
    return out;
  }
  if (record.Covered() < options.min_history) {
    out.note = absl::StrCat(Minutes(record.Covered()),
                            " of unbroken history; a replay needs ",
                            Minutes(options.min_history));
    return out;
  }
  sim::SimConfig config;
  config.spec = job.spec;
  config.catalog = job.catalog.get();
  config.cold_start = job.cold_start;
  absl::StatusOr<std::vector<sim::ServiceModel>> models =
      sim::BuildServiceModels(config, false);
  if (!models.ok()) {
    out.note = absl::StrCat("cannot model the endpoint's servers: ",
                            models.status().message());
    return out;
  }
  sim::RetuneOptions o = options;
  if (o.candidates.empty()) {
    out.note = "no candidates";
    return out;
  }
  // The first is pilotlight as the controller runs it.
  o.candidates[0] = {"pilotlight", job.target_utilization};
  const absl::Time now = out.at;
  const std::optional<sim::PastReplay> r = sim::ReplayPast(
      record, now, config, *models, false, o,
      [&](absl::Duration window) {
        return sim::RecordedPast(record, now, window, job.spec, std::nullopt);
      },
      job.replicas);
  if (!r) {
    out.note = absl::StrCat("too little to replay: a replay measures at least ",
                            o.min_replayed_requests, " requests over ",
                            Minutes(o.min_replayed_span), " (",
                            record.CoveredArrivals(), " requests in ",
                            Minutes(record.Covered()), " recorded)");
    return out;
  }
  out.window = r->window;
  out.warmup = r->warmup;
  out.requests = r->measured_requests;
  const double hours = absl::ToDoubleHours(r->window - r->warmup);
  for (size_t i = 0; i < r->candidates.size(); ++i) {
    const sim::ReplayedCandidate& c = r->candidates[i];
    out.rows.push_back({o.candidates[i].policy, o.candidates[i].knob,
                        hours > 0 ? c.cost_usd / hours : 0, c.attainment,
                        c.cold, c.eligible, i == 0});
  }
  return out;
}

const CounterfactualRow* RunningRow(const Counterfactual& c) {
  const auto running =
      std::find_if(c.rows.begin(), c.rows.end(),
                   [](const CounterfactualRow& r) { return r.running; });
  return running == c.rows.end() ? nullptr : &*running;
}

std::optional<size_t> CheaperAsGood(const Counterfactual& c) {
  const CounterfactualRow* running = RunningRow(c);
  if (running == nullptr) {
    return std::nullopt;
  }
  std::optional<size_t> best;
  double best_cost = running->cost_per_hour;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const CounterfactualRow& r = c.rows[i];
    if (!r.running && r.eligible && r.attainment >= running->attainment &&
        r.cold <= running->cold && r.cost_per_hour < best_cost) {
      best = i;
      best_cost = r.cost_per_hour;
    }
  }
  return best;
}

std::string CandidateName(const CounterfactualRow& row) {
  if (row.policy == "keepalive-10m") {
    return absl::StrFormat("keep-alive %g min", row.knob);
  }
  return absl::StrFormat("%s at %g", row.policy, row.knob);
}

json CounterfactualJson(const Counterfactual& c) {
  // Four decimals: dollars to 1/100 cent, shares to 1/100 %.
  const auto r4 = [](double v) { return std::round(v * 1e4) / 1e4; };
  json rows = json::array();
  for (const CounterfactualRow& row : c.rows) {
    rows.push_back({{"policy", row.policy},
                    {"setting", row.knob},
                    {"name", CandidateName(row)},
                    {"costPerHour", r4(row.cost_per_hour)},
                    {"sloAttainment", r4(row.attainment)},
                    {"coldStartFraction", r4(row.cold)},
                    {"replayedAsItRuns", row.eligible},
                    {"running", row.running}});
  }
  json cheaper;  // null: none
  if (const std::optional<size_t> i = CheaperAsGood(c)) {
    const CounterfactualRow& r = c.rows[*i];
    const CounterfactualRow* running = RunningRow(c);  // there is one
    cheaper = {{"policy", r.policy},
               {"setting", r.knob},
               {"name", CandidateName(r)},
               {"costPerHour", r4(r.cost_per_hour)},
               {"saving", r4(1 - r.cost_per_hour / running->cost_per_hour)}};
  }
  return {{"time",
           c.at == absl::InfinitePast() ? json() : json(FormatRfc3339(c.at))},
          {"windowSeconds", absl::ToInt64Seconds(c.window)},
          {"warmupSeconds", absl::ToInt64Seconds(c.warmup)},
          {"requests", c.requests},
          {"candidates", rows},
          {"cheaper", cheaper},
          {"note", c.note}};
}

}  // namespace pilotlight::runtime
