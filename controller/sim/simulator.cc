#include "controller/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/policy/activation.h"
#include "controller/policy/time_window.h"
#include "controller/policy/variant_model.h"

namespace pilotlight::sim {

// --- LatencyHistogram
// ---------------------------------------------------------

namespace {
constexpr double kMinLatency = 1e-3;
constexpr double kGrowth = 1.01;  // bucket i covers [1ms x 1.01^(i-1), x1.01)
}  // namespace

void LatencyHistogram::Add(double seconds) {
  ++count_;
  if (!(seconds >= kMinLatency)) {
    ++counts_[0];
    return;
  }
  const int b =
      1 + static_cast<int>(std::log(seconds / kMinLatency) / std::log(kGrowth));
  ++counts_[static_cast<size_t>(std::min(b, kBuckets))];
}

double LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) {
    return 0;
  }
  const auto rank =
      static_cast<int64_t>(std::ceil(q * static_cast<double>(count_)));
  int64_t seen = 0;
  for (int i = 0; i <= kBuckets; ++i) {
    seen += counts_[static_cast<size_t>(i)];
    if (seen >= std::max<int64_t>(rank, 1)) {
      if (i == 0) {
        return 0;
      }
      // Upper edge of the bucket: never reports a latency as better.
      return kMinLatency * std::pow(kGrowth, i);
    }
  }
  return kMinLatency * std::pow(kGrowth, kBuckets);
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  for (size_t i = 0; i < counts_.size(); ++i) {
    counts_[i] += o.counts_[i];
  }
  count_ += o.count_;
}

void SimResult::Merge(const SimResult& o) {
  requests += o.requests;
  ticks += o.ticks;
  skipped_ticks += o.skipped_ticks;
  cold_start_requests += o.cold_start_requests;
  rejected_requests += o.rejected_requests;
  abandoned_requests += o.abandoned_requests;
  activation_timeouts += o.activation_timeouts;
  client_retries += o.client_retries;
  pokes += o.pokes;
  within_ttft_slo += o.within_ttft_slo;
  within_tpot_slo += o.within_tpot_slo;
  within_slo += o.within_slo;
  ttft.Merge(o.ttft);
  cost_usd += o.cost_usd;
  gpu_seconds += o.gpu_seconds;
  scale_events += o.scale_events;
  peak_replicas = std::max(peak_replicas, o.peak_replicas);
  preemptions += o.preemptions;
  retried_requests += o.retried_requests;
  for (size_t i = 0; i < slo_misses.size(); ++i) {
    slo_misses[i] += o.slo_misses[i];
  }
}

namespace {

// The observation idle skipping needs (ScalingPolicy::QuietUntil).
bool IsQuiet(const Observation& o) {
  if (o.in_flight != 0 || o.queued != 0 || o.arrivals != 0 ||
      o.output_tokens_per_s != 0 || o.completions_per_s != 0) {
    return false;
  }
  for (const policy::VariantState& v : o.variants) {
    if (!v.starting.empty() || v.terminating != 0 || v.ready != v.desired) {
      return false;
    }
  }
  return true;
}

}  // namespace

// --- Measured cold starts ----------------------------------------------------

absl::StatusOr<std::vector<double>> LoadColdStartSamples(
    const std::string& path, BadRows* bad) {
  absl::StatusOr<std::string> text = ReadMaybeGzip(path);
  if (!text.ok()) {
    return text.status();
  }
  std::vector<double> out;
  int column = -1;
  int64_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    const std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    if (line_no == 1) {
      double x = 0;
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "value") {
          column = static_cast<int>(i);
        }
      }
      if (column >= 0 || !absl::SimpleAtod(f.back(), &x)) {
        if (column < 0) {
          column = static_cast<int>(f.size()) - 1;
        }
        continue;  // a header line
      }
      column = static_cast<int>(f.size()) - 1;  // no header: the last column
    }
    double ms = 0;
    if (static_cast<size_t>(column) >= f.size() ||
        !absl::SimpleAtod(f[static_cast<size_t>(column)], &ms) || !(ms > 0)) {
      bad->Add(line_no, "cold-start value must be a number of ms > 0");
      continue;
    }
    out.push_back(ms / 1000.0);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no cold-start values (want a `value` column in ms)"));
  }
  return out;
}

// --- Service models
// -----------------------------------------------------------

absl::StatusOr<std::vector<ServiceModel>> BuildServiceModels(
    const SimConfig& config, bool trace_has_service_times) {
  const policy::EndpointSpec& spec = config.spec;
  std::vector<ServiceModel> out;
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    const policy::VariantSpec& v = spec.variants[i];
    absl::StatusOr<policy::VariantModel> vm =
        policy::DeriveVariant(spec, i, *config.catalog, config.tuning);
    if (!vm.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown GPU class ", v.gpu_class,
                       " (known: ", config.catalog->Names(), ")"));
    }
    ServiceModel m;
    m.gpus = v.gpus_per_replica;
    m.price_per_hour = vm->price_per_replica_hour;
    m.replica.emplace(vm->replica);
    m.cold_start = config.cold_start.value_or(vm->cold_start);
    if (spec.concurrency_per_replica > 0) {
      m.slots = spec.concurrency_per_replica;
    } else if (trace_has_service_times) {
      m.slots = 1;
    } else {
      m.slots = vm->capacity;
      if (m.slots < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            spec.model.name, " does not meet the TPOT SLO on ", v.gpu_class,
            " x", v.gpus_per_replica, " (see `pilotlight size`)"));
      }
    }
    m.tpot_s.resize(static_cast<size_t>(m.slots) + 1);
    for (int b = 1; b <= m.slots; ++b) {
      m.tpot_s[static_cast<size_t>(b)] =
          m.replica->TpotSeconds(b, spec.workload);
    }
    out.push_back(std::move(m));
  }
  return out;
}

// --- The engine
// ---------------------------------------------------------------

namespace {

struct Replica {
  int variant = 0;
  enum class State {
    kStarting,
    kReady,
    kDraining,
    kGone
  } state = State::kStarting;
  double requested_s = 0;
  double ready_s = 0;
  int busy = 0;
  int zone = 0;
  bool preempted = false;
};

struct Completion {
  double t;
  int replica;
  uint32_t output_tokens;
  const Request* request;
  bool operator>(const Completion& o) const { return t > o.t; }
};

class Engine {
 public:
  Engine(const EndpointTrace& trace, double duration_s, const SimConfig& c,
         const std::vector<ServiceModel>& models, ScalingPolicy& policy,
         const ReplayProgress& progress)
      : trace_(trace),
        duration_s_(duration_s),
        config_(c),
        models_(models),
        policy_(policy),
        desired_(models.size(), 0),
        learned_(models.size()),
        cold_start_stats_(models.size()),
        next_zone_(models.size(), 0),
        zone_free_at_(models.size(),
                      std::vector<double>(
                          static_cast<size_t>(std::max(1, c.zones)), -1e18)),
        last_preemption_(models.size()),
        started_(trace.requests.size(), false),
        progress_(progress) {}

  SimResult Run() {
    const double tick = absl::ToDoubleSeconds(config_.tick);
    // The clock starts one cold start (+ a tick) before the first possible
    // arrival, so a policy that knows the future (the oracle) can have a
    // replica ready for it; the others see no demand until then.
    double lead = 0;
    for (const ServiceModel& m : models_) {
      lead = std::max(lead, absl::ToDoubleSeconds(m.cold_start));
    }
    for (double s : config_.cold_start_samples) {
      lead = std::max(lead, s);
    }
    double next_tick = -std::ceil((lead + tick) / tick) * tick +
                       absl::ToDoubleSeconds(config_.tick_phase);
    last_tick_ = next_tick;
    SchedulePreemptions(next_tick);
    const double point_every =
        config_.timeline_points > 0
            ? std::max(tick, duration_s_ / config_.timeline_points)
            : std::numeric_limits<double>::infinity();
    double next_point = next_tick;
    const double report_every = progress_ && duration_s_ > 0
                                    ? duration_s_ / 100
                                    : std::numeric_limits<double>::infinity();
    double next_report = report_every;
    // Run past the last arrival until every request is served.
    const double report_lag =
        absl::ToDoubleSeconds(config_.activator.report_lag);
    while (next_tick <= duration_s_ || next_ < trace_.requests.size() ||
           !queue_.empty() || !completions_.empty() || !retries_.empty()) {
      if (report_lag > 0) {
        ProcessUntil(next_tick - report_lag);
        reported_ = Seen();  // the activator's last report before the tick
      }
      ProcessUntil(next_tick);
      Tick(next_tick, /*poke=*/false);
      if (next_tick >= next_point) {
        Point(next_tick);
        next_point += point_every;
      }
      next_tick += tick;
      if (config_.skip_idle) {
        SkipIdle(next_tick, next_point);
      }
      if (next_tick >= next_report) {
        progress_(std::min(1.0, next_tick / duration_s_));
        next_report = (std::floor(next_tick / report_every) + 1) * report_every;
      }
      if (next_tick > duration_s_ + 86400 * 7) {
        break;  // a policy that never serves: stop a week past the end
      }
    }
    // Bill every replica still up until the end.
    const double end = std::max(next_tick, duration_s_);
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (replicas_[i].state != Replica::State::kGone) {
        Stop(static_cast<int>(i), end);
      }
    }
    result_.cost_usd = billed_cost_;
    return std::move(result_);
  }

 private:
  void ProcessUntil(double until) {
    for (;;) {
      const double t_arrival = next_ < trace_.requests.size()
                                   ? trace_.requests[next_].arrival_s
                                   : std::numeric_limits<double>::infinity();
      const double t_done = completions_.empty()
                                ? std::numeric_limits<double>::infinity()
                                : completions_.top().t;
      const double t_ready = starting_.empty()
                                 ? std::numeric_limits<double>::infinity()
                                 : starting_.top().first;
      const double t_preempt = next_preemption_ < preemptions_.size()
                                   ? preemptions_[next_preemption_].t
                                   : std::numeric_limits<double>::infinity();
      const double t_deadline = NextDeadline();
      const double t_retry = NextRetry();
      const double t = std::min({t_arrival, t_done, t_ready, t_preempt,
                                 poke_at_, t_deadline, t_retry});
      if (t >= until) {
        return;
      }
      now_ = t;
      if (t == poke_at_) {
        // The activator's poke: the policy decides now, not at the tick.
        poke_at_ = std::numeric_limits<double>::infinity();
        ++result_.pokes;
        Tick(t, /*poke=*/true);
      } else if (t == t_preempt) {
        Preempt(preemptions_[next_preemption_++]);
      } else if (t == t_done) {
        const Completion c = completions_.top();
        completions_.pop();
        Replica& r = replicas_[static_cast<size_t>(c.replica)];
        --in_flight_;
        if (r.preempted) {
          // Its replica was taken: the request starts over, first in line.
          ++result_.retried_requests;
          queue_.push_front(c.request);
          Dispatch();
          continue;
        }
        --r.busy;
        tokens_since_tick_ += c.output_tokens;
        if (config_.prometheus_rate_window > absl::ZeroDuration()) {
          completed_at_.push_back(t);
        }
        if (r.state == Replica::State::kDraining && r.busy == 0) {
          Stop(c.replica, t);
        } else {
          Dispatch();
        }
      } else if (t == t_ready) {
        const int id = starting_.top().second;
        starting_.pop();
        Replica& r = replicas_[static_cast<size_t>(id)];
        if (r.state == Replica::State::kStarting) {
          r.state = Replica::State::kReady;
          --starting_count_;
          r.ready_s = t;
          ++ready_count_;
          Learn(r.variant, Measured(r.requested_s, t));
          Dispatch();
        }
      } else if (t == t_deadline) {
        Expire();
      } else if (t == t_retry) {
        const Due r = retries_.top();
        retries_.pop();
        Arrive(r.index, r.attempt);
      } else {
        const Request& req = trace_.requests[next_++];
        result_.requests += Counted(req) ? 1 : 0;
        Arrive(next_ - 1, 0);
      }
    }
  }

  // A request's try `attempt` (0: its first) reaches the activator now:
  // refused if the hold is full (429), else held or queued until a replica
  // takes it or it times out.
  void Arrive(size_t index, int attempt) {
    const Request& req = trace_.requests[index];
    // The activator counts a request's first try only: the OpenAI SDKs mark
    // a retry (X-Stainless-Retry-Count), and the demand it reports counts
    // each request once.
    arrivals_ += attempt == 0 ? 1 : 0;
    const ActivatorModel& a = config_.activator;
    // What it found, by its first try: why it missed, if it does.
    const auto found = [&] {
      if (attempt == 0) {
        cause_[index] = static_cast<uint8_t>(
            ready_count_ == 0     ? MissCause::kNoneReady
            : starting_count_ > 0 ? MissCause::kFullStarting
                                  : MissCause::kFullNoneAsked);
      }
    };
    if (a.max_held > 0 && std::ssize(queue_) >= a.max_held && !FreeSlot()) {
      found();
      // 429 + Retry-After.
      if (!RetryLater(index, attempt, policy::kRetryAfterHoldFullS) &&
          Counted(req)) {
        ++result_.rejected_requests;
      }
      return;
    }
    if (ready_count_ == 0 && a.poke_delay &&
        poke_at_ == std::numeric_limits<double>::infinity()) {
      poke_at_ = now_ + absl::ToDoubleSeconds(*a.poke_delay);
    }
    queue_.push_back(&req);
    Dispatch();
    if (!queue_.empty() && queue_.back() == &req) {
      found();
      SetDeadline(index, attempt);
    }
  }

  // The client tries again `delay_s` from now if it has tries left.
  bool RetryLater(size_t index, int attempt, double delay_s) {
    if (attempt >= config_.activator.client_retries) {
      return false;
    }
    retries_.push({now_ + delay_s, index, attempt + 1});
    result_.client_retries += Counted(trace_.requests[index]) ? 1 : 0;
    return true;
  }

  double NextRetry() const {
    return retries_.empty() ? std::numeric_limits<double>::infinity()
                            : retries_.top().t;
  }

  // Idle skipping: advances `next_tick` over the ticks at which nothing can
  // change -- the engine is settled (nothing queued, in flight, starting or
  // draining, no poke due), the last tick was quiet, and the policy promises
  // its answer until QuietUntil() -- up to the next arrival (or a client's
  // retry), preemption or timeline point and never past the trace's end. The
  // policy is told which ticks it missed (SkipQuiet). The grid is walked by the
  // same additions stepping makes, so the ticks after a skip fall at exactly
  // the same times.
  void SkipIdle(double& next_tick, double next_point) {
    if (!last_tick_quiet_ || !queue_.empty() || !completions_.empty() ||
        in_flight_ != 0 ||
        poke_at_ != std::numeric_limits<double>::infinity()) {
      return;
    }
    for (int id : live_ids_) {
      if (replicas_[static_cast<size_t>(id)].state != Replica::State::kReady) {
        return;
      }
    }
    const absl::Time until = policy_.QuietUntil();
    if (until <= config_.epoch + absl::Seconds(next_tick)) {
      return;
    }
    // A microsecond short of the promise: a tick that lands on it runs.
    const double until_s =
        until == absl::InfiniteFuture()
            ? std::numeric_limits<double>::infinity()
            : absl::ToDoubleSeconds(until - config_.epoch) - 1e-6;
    const double t_arrival = next_ < trace_.requests.size()
                                 ? trace_.requests[next_].arrival_s
                                 : std::numeric_limits<double>::infinity();
    const double t_preempt = next_preemption_ < preemptions_.size()
                                 ? preemptions_[next_preemption_].t
                                 : std::numeric_limits<double>::infinity();
    const double horizon =
        std::min({until_s, t_arrival, t_preempt, next_point, NextRetry()});
    const double tick = absl::ToDoubleSeconds(config_.tick);
    const double first = next_tick;
    int64_t n = 0;
    while (next_tick < horizon && next_tick <= duration_s_) {
      next_tick += tick;
      ++n;
    }
    if (n == 0) {
      return;
    }
    policy_.SkipQuiet(config_.epoch + absl::Seconds(first), config_.tick, n);
    result_.skipped_ticks += n;
    last_tick_ = next_tick - tick;
  }

  // Whether a request is measured: it arrives after the warm-up.
  bool Counted(const Request& req) const {
    return req.arrival_s >= measure_from_s_;
  }

  size_t Index(const Request& req) const {
    return static_cast<size_t>(&req - trace_.requests.data());
  }

  // The live activator's activation timeout (policy::ActivationRule) from
  // the controller's prediction: a variant's learned p90 once it has 3
  // samples, else the cold-start model's estimate; the slowest variant's.
  double ActivationTimeoutS() const {
    absl::Duration lead;
    for (size_t v = 0; v < models_.size(); ++v) {
      const policy::ColdStartStats& s = cold_start_stats_[v];
      lead = std::max(lead, s.samples >= 3 ? s.p90 : models_[v].cold_start);
    }
    return absl::ToDoubleSeconds(policy::ActivationRule{}.For(lead));
  }

  // A request that could not start on arriving (now) stops waiting at the
  // first of its client's timeout and the activator's activation timeout.
  void SetDeadline(size_t index, int attempt) {
    const ActivatorModel& a = config_.activator;
    const double client = a.client_timeout
                              ? now_ + absl::ToDoubleSeconds(*a.client_timeout)
                              : std::numeric_limits<double>::infinity();
    const double activation = a.activation_timeout
                                  ? now_ + ActivationTimeoutS()
                                  : std::numeric_limits<double>::infinity();
    const double t = std::min(client, activation);
    if (t < std::numeric_limits<double>::infinity()) {
      deadlines_.push({{t, index, attempt}, activation < client});
    }
  }

  // When the next waiting request stops waiting (infinity: none will);
  // deadlines of requests that started meanwhile are dropped here.
  double NextDeadline() {
    while (!deadlines_.empty() && started_[deadlines_.top().index]) {
      deadlines_.pop();
    }
    return deadlines_.empty() ? std::numeric_limits<double>::infinity()
                              : deadlines_.top().t;
  }

  // The next waiting request stops waiting: its client hangs up, or the
  // activator answers 503. It leaves the hold (or the queue). If its client
  // tries again, that is a new arrival later; else it is a miss by the
  // state it found on arrival, and a cold-start request if a replica was
  // starting when it left.
  void Expire() {
    const Deadline d = deadlines_.top();
    deadlines_.pop();
    const Request& req = trace_.requests[d.index];
    queue_.erase(std::find(queue_.begin(), queue_.end(), &req));
    // After a 503 the client waits its Retry-After; after its own timeout,
    // the OpenAI SDKs' back-off.
    const double delay_s =
        d.activation ? policy::kRetryAfterActivationTimeoutS
                     : std::min(8.0, 0.5 * std::ldexp(1.0, d.attempt));
    if (RetryLater(d.index, d.attempt, delay_s)) {
      return;
    }
    started_[d.index] = true;  // it will never start: no deadline again
    if (!Counted(req)) {
      return;
    }
    ++(d.activation ? result_.activation_timeouts : result_.abandoned_requests);
    ++result_.slo_misses[cause_[d.index]];
    if (starting_count_ > 0) {
      ++result_.cold_start_requests;  // it stopped waiting for one
    }
  }

  bool FreeSlot() const {
    for (int id : live_ids_) {
      const Replica& r = replicas_[static_cast<size_t>(id)];
      if (r.state == Replica::State::kReady &&
          r.busy < models_[static_cast<size_t>(r.variant)].slots) {
        return true;
      }
    }
    return false;
  }

  // Starts queued requests on ready replicas with free slots, FIFO.
  void Dispatch() {
    while (!queue_.empty()) {
      int best = -1;
      for (size_t i = 0; i < live_ids_.size(); ++i) {
        const Replica& r = replicas_[static_cast<size_t>(live_ids_[i])];
        if (r.state != Replica::State::kReady ||
            r.busy >= models_[static_cast<size_t>(r.variant)].slots) {
          continue;
        }
        if (best < 0 || r.busy < replicas_[static_cast<size_t>(best)].busy) {
          best = live_ids_[i];
        }
      }
      if (best < 0) {
        return;
      }
      const Request& req = *queue_.front();
      queue_.pop_front();
      Replica& r = replicas_[static_cast<size_t>(best)];
      ++r.busy;
      ++in_flight_;
      const ServiceModel& m = models_[static_cast<size_t>(r.variant)];
      const double wait = now_ - req.arrival_s;
      double ttft = wait;
      double service = 0;
      double tpot = 0;  // none with the trace's own service times
      if (req.service_s >= 0 && service_times_) {
        service = static_cast<double>(req.service_s);
      } else {
        const double prefill = m.replica->TtftSeconds(
            static_cast<int>(std::max<uint32_t>(1, req.input_tokens)));
        ttft += prefill;
        tpot = m.tpot_s[static_cast<size_t>(r.busy)];
        service = prefill + req.output_tokens * tpot;
      }
      // A retried request keeps the TTFT of its first start: its user saw
      // the first token then (the retry regenerates, it does not re-wait).
      const size_t index = Index(req);
      if (!started_[index]) {
        started_[index] = true;
        const bool cold = r.ready_s > req.arrival_s;
        if (config_.request_log) {
          config_.request_log(RequestRecord{.arrival_s = req.arrival_s,
                                            .start_s = now_,
                                            .ttft_s = ttft,
                                            .done_s = now_ + service,
                                            .cold = cold,
                                            .replica = best,
                                            .variant = r.variant});
        }
        if (Counted(req)) {
          Account(req, index, ttft, tpot, cold);
        }
      }
      completions_.push({now_ + service, best, req.output_tokens, &req});
    }
  }

  // A measured request's first start: its cold start, TTFT and SLO.
  void Account(const Request& req, size_t index, double ttft, double tpot,
               bool cold) {
    if (cold) {
      ++result_.cold_start_requests;  // it waited for this replica
    }
    result_.ttft.Add(ttft);
    const bool ttft_ok =
        ttft <=
        ttft_slo_s_ + config_.ttft_slo_per_prompt_token_s * req.input_tokens;
    const bool tpot_ok = tpot <= tpot_slo_s_ * (1 + 1e-9);
    result_.within_ttft_slo += ttft_ok ? 1 : 0;
    result_.within_tpot_slo += tpot_ok ? 1 : 0;
    result_.within_slo += ttft_ok && tpot_ok ? 1 : 0;
    if (!ttft_ok || !tpot_ok) {
      ++result_.slo_misses[cause_[index]];
    }
  }

  // Records a measured cold start (the last 64 per variant) and refreshes
  // the p50/p90 the policies see -- once per replica start, not per tick.
  // A cold start as the controller measures it: from the pod's creation
  // to its Ready stamp, both at SimConfig::cold_start_resolution.
  double Measured(double requested_s, double ready_s) const {
    const absl::Duration res = config_.cold_start_resolution;
    if (res <= absl::ZeroDuration()) {
      return ready_s - requested_s;
    }
    const auto stamp = [&](double s) {
      return policy::FloorDiv(
          config_.epoch + absl::Seconds(s) - absl::UnixEpoch(), res);
    };
    return absl::ToDoubleSeconds(res * (stamp(ready_s) - stamp(requested_s)));
  }

  void Learn(int variant, double seconds) {
    const auto v = static_cast<size_t>(variant);
    std::vector<double>& l = learned_[v];
    l.push_back(seconds);
    if (l.size() > 64) {
      l.erase(l.begin());
    }
    std::vector<double> s = l;
    std::sort(s.begin(), s.end());
    policy::ColdStartStats& stats = cold_start_stats_[v];
    stats.samples = static_cast<int32_t>(s.size());
    stats.p50 = absl::Seconds(s[s.size() / 2]);
    stats.p90 = absl::Seconds(s[std::min(s.size() - 1, s.size() * 9 / 10)]);
  }

  bool IsSpot(int variant) const {
    return config_.spec.variants[static_cast<size_t>(variant)].capacity ==
           policy::CapacityType::kSpot;
  }

  void Start(int variant, double t) {
    Replica r;
    r.variant = variant;
    r.requested_s = t;
    const auto v = static_cast<size_t>(variant);
    r.zone = next_zone_[v]++ % static_cast<int>(zone_free_at_[v].size());
    // A spot replica in a zone without capacity waits until it returns.
    const double placed =
        IsSpot(variant)
            ? std::max(t, zone_free_at_[v][static_cast<size_t>(r.zone)])
            : t;
    replicas_.push_back(r);
    const int id = static_cast<int>(replicas_.size()) - 1;
    live_ids_.push_back(id);
    ++starting_count_;
    double cold = absl::ToDoubleSeconds(models_[v].cold_start);
    if (!config_.cold_start_samples.empty()) {
      std::uniform_int_distribution<size_t> pick(
          0, config_.cold_start_samples.size() - 1);
      cold = config_.cold_start_samples[pick(cold_rng_)];
    }
    starting_.push({placed + cold, id});
  }

  struct Preemption {
    double t;
    int variant;
    int zone;
  };

  void SchedulePreemptions(double from) {
    if (config_.spot_preemptions_per_hour <= 0) {
      return;
    }
    std::mt19937_64 rng(config_.seed ^ 0x5107ULL);
    std::exponential_distribution<double> gap(
        config_.spot_preemptions_per_hour / 3600.0);
    const double end = duration_s_ + 3600;
    for (size_t v = 0; v < models_.size(); ++v) {
      if (!IsSpot(static_cast<int>(v))) {
        continue;
      }
      std::uniform_int_distribution<int> zone(
          0, static_cast<int>(zone_free_at_[v].size()) - 1);
      double t = from + gap(rng);
      while (t < end) {
        preemptions_.push_back({t, static_cast<int>(v), zone(rng)});
        t += gap(rng);
      }
    }
    std::sort(
        preemptions_.begin(), preemptions_.end(),
        [](const Preemption& a, const Preemption& b) { return a.t < b.t; });
  }

  void Preempt(const Preemption& p) {
    const auto v = static_cast<size_t>(p.variant);
    zone_free_at_[v][static_cast<size_t>(p.zone)] =
        p.t + absl::ToDoubleSeconds(config_.spot_zone_outage);
    last_preemption_[v] = config_.epoch + absl::Seconds(p.t);
    const std::vector<int> live = live_ids_;
    for (int id : live) {
      Replica& r = replicas_[static_cast<size_t>(id)];
      if (r.variant != p.variant || r.zone != p.zone) {
        continue;
      }
      ++result_.preemptions;
      r.preempted = r.busy > 0;  // its completions become retries
      r.busy = 0;
      Stop(id, p.t);
    }
  }

  void Stop(int id, double t) {
    Replica& r = replicas_[static_cast<size_t>(id)];
    if (r.state == Replica::State::kReady) {
      --ready_count_;
    } else if (r.state == Replica::State::kStarting) {
      --starting_count_;
    }
    r.state = Replica::State::kGone;
    const ServiceModel& m = models_[static_cast<size_t>(r.variant)];
    const double lived = std::max(0.0, t - r.requested_s);
    const double g = absl::ToDoubleSeconds(config_.billing_granularity);
    const double billed = g > 0 ? std::ceil(lived / g - 1e-9) * g : lived;
    // What falls after the warm-up (all of it without one).
    const double from = std::max(r.requested_s, measure_from_s_);
    billed_cost_ += std::max(0.0, r.requested_s + billed - from) *
                    m.price_per_hour / 3600.0;
    result_.gpu_seconds += std::max(0.0, t - from) * m.gpus;
    live_ids_.erase(std::find(live_ids_.begin(), live_ids_.end(), id));
  }

  // Scales variant `v` from its live replicas to `want`.
  void Apply(int v, int want) {
    std::vector<int> live;
    for (int id : live_ids_) {
      const Replica& r = replicas_[static_cast<size_t>(id)];
      if (r.variant == v && r.state != Replica::State::kDraining) {
        live.push_back(id);
      }
    }
    int have = static_cast<int>(live.size());
    while (have < want) {
      Start(v, now_);
      ++have;
    }
    if (have <= want) {
      return;
    }
    // Remove starting replicas first (newest first), then idle ready ones
    // (newest first, as a ReplicaSet picks among ready pods), then drain
    // the least busy -- or, when the policy asks,
    // stop or drain the one with the least paid time left, whatever its
    // state.
    const double g = absl::ToDoubleSeconds(config_.billing_granularity);
    const bool by_paid =
        policy_.RemoveByPaidTime() && g > absl::ToDoubleSeconds(config_.tick);
    const auto paid_left = [&](const Replica& r) {
      const double lived = now_ - r.requested_s;
      return std::ceil(lived / g - 1e-9) * g - lived;
    };
    std::stable_sort(live.begin(), live.end(), [&](int a, int b) {
      const Replica& ra = replicas_[static_cast<size_t>(a)];
      const Replica& rb = replicas_[static_cast<size_t>(b)];
      if (by_paid && paid_left(ra) != paid_left(rb)) {
        return paid_left(ra) < paid_left(rb);
      }
      const bool sa = ra.state == Replica::State::kStarting;
      const bool sb = rb.state == Replica::State::kStarting;
      if (sa != sb) {
        return sa;
      }
      if (sa) {
        return ra.requested_s > rb.requested_s;
      }
      if (ra.busy != rb.busy) {
        return ra.busy < rb.busy;
      }
      return ra.requested_s > rb.requested_s;  // a ReplicaSet: newest first
    });
    for (int id : live) {
      if (have <= want) {
        break;
      }
      Replica& r = replicas_[static_cast<size_t>(id)];
      if (r.state == Replica::State::kStarting || r.busy == 0) {
        Stop(id, now_);
      } else {
        r.state = Replica::State::kDraining;
        --ready_count_;
      }
      --have;
    }
  }

  // The demand the activator would report now.
  struct Demand {
    int in_flight = 0;
    size_t queued = 0;
    int64_t arrivals = 0;  // since the start
  };
  Demand Seen() const { return {in_flight_, queue_.size(), arrivals_}; }

  // A tick (or a poke's decision) at `t`: the policy sees the demand of
  // the activator's last report (ActivatorModel::report_lag; a poke's is
  // its own, sent at once) and the replicas of now.
  void Tick(double t, bool poke) {
    now_ = t;
    const Demand seen =
        poke || config_.activator.report_lag <= absl::ZeroDuration()
            ? Seen()
            : reported_;
    Observation o;
    o.now = config_.epoch + absl::Seconds(t);
    o.in_flight = seen.in_flight;
    o.queued = static_cast<double>(seen.queued);
    // Arrivals counted since the last decision's report (a report before
    // a poke's is older than the poke: nothing new).
    o.arrivals =
        static_cast<double>(std::max<int64_t>(0, seen.arrivals - counted_));
    counted_ = std::max(counted_, seen.arrivals);
    if (config_.prometheus_rate_window > absl::ZeroDuration()) {
      const double window =
          absl::ToDoubleSeconds(config_.prometheus_rate_window);
      while (!completed_at_.empty() && completed_at_.front() <= t - window) {
        completed_at_.pop_front();
      }
      o.completions_per_s = static_cast<double>(completed_at_.size()) / window;
    }
    const double dt = t - last_tick_;
    o.output_tokens_per_s = dt > 0 ? tokens_since_tick_ / dt : 0;
    tokens_since_tick_ = 0;
    last_tick_ = t;
    o.variants.resize(models_.size());
    for (size_t v = 0; v < models_.size(); ++v) {
      o.variants[v].desired = desired_[v];
      o.variants[v].cold_start = cold_start_stats_[v];
    }
    double gpus_held = 0;
    for (int id : live_ids_) {
      const Replica& r = replicas_[static_cast<size_t>(id)];
      gpus_held += models_[static_cast<size_t>(r.variant)].gpus;
      policy::VariantState& vs = o.variants[static_cast<size_t>(r.variant)];
      if (r.state == Replica::State::kReady) {
        ++vs.ready;
      } else if (r.state == Replica::State::kStarting) {
        vs.starting.push_back(config_.epoch + absl::Seconds(r.requested_s));
      } else if (r.state == Replica::State::kDraining) {
        ++vs.terminating;
      }
    }
    if (config_.pool_gpus > 0) {
      for (size_t v = 0; v < models_.size(); ++v) {
        o.variants[v].node_free =
            config_.pool_gpus - gpus_held >= models_[v].gpus;
      }
    }
    for (size_t v = 0; v < models_.size(); ++v) {
      if (last_preemption_[v]) {
        o.spot.push_back({config_.spec.variants[v].gpu_class,
                          last_preemption_[v], std::nullopt});
      }
    }
    last_tick_quiet_ = IsQuiet(o);
    ++result_.ticks;
    const std::vector<int> want = policy_.Tick(o);
    int total = 0;
    for (size_t v = 0; v < models_.size() && v < want.size(); ++v) {
      const int w = std::max(0, want[v]);
      if (w != desired_[v]) {
        result_.scale_events += t >= measure_from_s_ ? 1 : 0;
        desired_[v] = w;
      }
      Apply(static_cast<int>(v), w);
      total += w;
    }
    result_.peak_replicas = std::max(result_.peak_replicas, total);
    Dispatch();
  }

  void Point(double t) {
    TimelinePoint p;
    p.t_s = t;
    p.demand = in_flight_ + static_cast<double>(queue_.size());
    for (int id : live_ids_) {
      const Replica& r = replicas_[static_cast<size_t>(id)];
      ++p.replicas;
      p.ready += r.state == Replica::State::kReady ? 1 : 0;
    }
    p.cold_starts = result_.cold_start_requests;
    // Cost so far: billed replicas + the running ones up to now.
    double running = 0;
    for (int id : live_ids_) {
      const Replica& r = replicas_[static_cast<size_t>(id)];
      running += std::max(0.0, t - std::max(r.requested_s, measure_from_s_)) *
                 models_[static_cast<size_t>(r.variant)].price_per_hour / 3600;
    }
    p.cost_usd = billed_cost_ + running;
    result_.timeline.push_back(p);
  }

 public:
  void set_service_times(bool b) { service_times_ = b; }

 private:
  const EndpointTrace& trace_;
  double duration_s_;
  const SimConfig& config_;
  const std::vector<ServiceModel>& models_;
  ScalingPolicy& policy_;

  double now_ = 0;
  double poke_at_ = std::numeric_limits<double>::infinity();
  std::deque<double> completed_at_;  // within the Prometheus rate window
  bool last_tick_quiet_ = false;     // the last Tick's observation was quiet
  double last_tick_ = 0;
  size_t next_ = 0;
  std::deque<const Request*> queue_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>>
      completions_;
  std::priority_queue<std::pair<double, int>,
                      std::vector<std::pair<double, int>>, std::greater<>>
      starting_;
  std::vector<Replica> replicas_;
  std::vector<int> live_ids_;  // every replica not gone (any state)
  int ready_count_ = 0;
  int starting_count_ = 0;  // replicas asked for and not yet ready (or gone)
  int in_flight_ = 0;
  int64_t arrivals_ = 0;  // since the start
  int64_t counted_ = 0;   // arrivals a decision has been told of
  Demand reported_;       // the last report before the coming tick
  double tokens_since_tick_ = 0;
  std::vector<int> desired_;
  std::vector<std::vector<double>> learned_;
  std::vector<policy::ColdStartStats> cold_start_stats_;  // from learned_
  double billed_cost_ = 0;
  bool service_times_ = false;
  std::vector<int> next_zone_;
  std::vector<std::vector<double>> zone_free_at_;  // per variant, per zone
  std::vector<std::optional<absl::Time>> last_preemption_;
  std::vector<Preemption> preemptions_;
  size_t next_preemption_ = 0;
  std::vector<bool> started_;  // per request: dispatched once already
                               // (or stopped waiting: it never will be)
  // Something due for request `index` at `t`, on its client's try
  // `attempt` (0: its first); earliest first, then in trace order.
  struct Due {
    double t = 0;
    size_t index = 0;
    int attempt = 0;
    bool operator>(const Due& o) const {
      return t != o.t ? t > o.t : index > o.index;
    }
  };
  // When waiting requests stop waiting (SetDeadline).
  struct Deadline : Due {
    bool activation = false;  // the activator's 503, else the client left
  };
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>>
      deadlines_;
  // Requests whose clients try again (ActivatorModel::client_retries), at
  // the try they will be.
  std::priority_queue<Due, std::vector<Due>, std::greater<>> retries_;
  // Per request: what it found on arrival (MissCause; kServed when it
  // started at once).
  std::vector<uint8_t> cause_ = std::vector<uint8_t>(
      trace_.requests.size(), static_cast<uint8_t>(MissCause::kServed));
  const ReplayProgress& progress_;  // may be empty
  const double ttft_slo_s_ = absl::ToDoubleSeconds(config_.spec.slo.ttft);
  // Measured from here: the warm-up's end, else everything (the clock
  // starts before 0, and a replica the oracle starts ahead of the first
  // arrival is paid for).
  const double measure_from_s_ = config_.warmup > absl::ZeroDuration()
                                     ? absl::ToDoubleSeconds(config_.warmup)
                                     : -std::numeric_limits<double>::infinity();
  const double tpot_slo_s_ = absl::ToDoubleSeconds(config_.spec.slo.tpot);
  std::mt19937_64 cold_rng_{config_.seed ^ 0xC01DULL};
  SimResult result_;
};

}  // namespace

double SloAttainment(const SimResult& r) {
  return r.requests > 0 ? static_cast<double>(r.within_slo) /
                              static_cast<double>(r.requests)
                        : 1;
}

double ColdStartFraction(const SimResult& r) {
  return r.requests > 0 ? static_cast<double>(r.cold_start_requests) /
                              static_cast<double>(r.requests)
                        : 0;
}

SimResult SimulateEndpoint(const EndpointTrace& requests, double duration_s,
                           const SimConfig& config,
                           const std::vector<ServiceModel>& models,
                           ScalingPolicy& policy,
                           const ReplayProgress& progress) {
  Engine e(requests, duration_s, config, models, policy, progress);
  bool service_times = false;
  for (const Request& r : requests.requests) {
    if (r.service_s >= 0) {
      service_times = true;
      break;
    }
  }
  e.set_service_times(service_times);
  return e.Run();
}

}  // namespace pilotlight::sim
