#include "controller/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "controller/policy/activation.h"
#include "controller/sim/replica_pool.h"

namespace pilotlight::sim {

void SimResult::Merge(const SimResult& o) {
  requests += o.requests;
  ticks += o.ticks;
  skipped_ticks += o.skipped_ticks;
  cold_start_requests += o.cold_start_requests;
  wakes += o.wakes;
  wake_requests += o.wake_requests;
  pool_changes.insert(pool_changes.end(), o.pool_changes.begin(),
                      o.pool_changes.end());
  asleep_cost_usd += o.asleep_cost_usd;
  woken_cost_usd += o.woken_cost_usd;
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
  noticed += o.noticed;
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

namespace {

struct Completion {
  double t;
  int replica;
  uint32_t output_tokens;
  const Request* request;
  bool operator>(const Completion& o) const { return t > o.t; }
};

// The event loop of one replay: arrivals into the activator's hold,
// dispatch onto the pool's replicas, completions, replicas becoming ready,
// preemptions, timeouts and retries, and the policy's ticks and pokes.
class Engine {
 public:
  Engine(const EndpointTrace& trace, double duration_s, const SimConfig& c,
         const std::vector<ServiceModel>& models, ScalingPolicy& policy,
         const ReplayProgress& progress, bool service_times)
      : trace_(trace),
        duration_s_(duration_s),
        config_(c),
        models_(models),
        policy_(policy),
        wants_sizes_(policy.WantsRequestSizes()),
        progress_(progress),
        service_times_(service_times),
        pool_(c, models, measure_from_s_),
        hold_(c.activator, trace.requests.size()),
        cold_starts_(c, models),
        desired_(models.size(), 0),
        last_preemption_(models.size()) {}

  SimResult Run();

 private:
  void ProcessUntil(double until);
  void Complete();
  void Arrive(size_t index, int attempt);
  bool RetryLater(size_t index, int attempt, double delay_s);
  void SkipIdle(double& next_tick, double next_point);
  void Expire();
  void Dispatch();
  void Account(const Request& req, size_t index, double ttft, double tpot,
               bool cold);
  void Tick(double t, bool poke);
  void ScaleVariant(int variant, int want, bool by_paid);
  void Notice();
  // When the next preemption's notice is due (infinity: none, or notices
  // are off).
  double NextNotice() const {
    return notice_s_ > 0 && next_notice_ < preemptions_.size()
               ? preemptions_[next_notice_].t - notice_s_
               : std::numeric_limits<double>::infinity();
  }
  Observation Observe(double t, bool poke);
  void Point(double t);

  // Whether a request is measured: it arrives after the warm-up.
  bool Counted(const Request& req) const {
    return req.arrival_s >= measure_from_s_;
  }
  size_t Index(const Request& req) const {
    return static_cast<size_t>(&req - trace_.requests.data());
  }
  // The demand the activator would report now.
  struct Demand {
    int in_flight = 0;
    size_t queued = 0;
    int64_t arrivals = 0;  // since the start
  };
  Demand Seen() const {
    return {in_flight_, hold_.queue().size(), hold_.arrivals()};
  }

  const EndpointTrace& trace_;
  double duration_s_;
  const SimConfig& config_;
  const std::vector<ServiceModel>& models_;
  ScalingPolicy& policy_;
  const bool wants_sizes_;          // ScalingPolicy::WantsRequestSizes()
  const ReplayProgress& progress_;  // may be empty
  const bool service_times_;        // the trace's own service times
  // A replay of an endpoint's past (SimConfig::initial_replicas given).
  const bool resumed_ = !config_.initial_replicas.empty();
  // Measured from here: the warm-up's end, else everything (the clock
  // starts before 0, and a replica the oracle starts ahead of the first
  // arrival is paid for).
  const double measure_from_s_ = config_.warmup > absl::ZeroDuration()
                                     ? absl::ToDoubleSeconds(config_.warmup)
                                     : -std::numeric_limits<double>::infinity();
  const double ttft_slo_s_ = absl::ToDoubleSeconds(config_.spec.slo.ttft);
  const double tpot_slo_s_ = absl::ToDoubleSeconds(config_.spec.slo.tpot);
  // Before this the policy is not asked (initial_hold).
  const double hold_s_ = resumed_ ? absl::ToDoubleSeconds(config_.initial_hold)
                                  : -std::numeric_limits<double>::infinity();

  ReplicaPool pool_;
  ActivatorHold hold_;
  ColdStarts cold_starts_;
  double now_ = 0;
  double poke_at_ = std::numeric_limits<double>::infinity();
  std::deque<double> completed_at_;  // within the Prometheus rate window
  // Completed since the last observation, when the policy wants them.
  std::vector<Observation::RequestSize> completed_sizes_;
  bool last_tick_quiet_ = false;  // the last Tick's observation was quiet
  double last_tick_ = 0;
  size_t next_ = 0;  // the next request of the trace to arrive
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>>
      completions_;
  int in_flight_ = 0;
  int64_t counted_ = 0;  // arrivals a decision has been told of
  Demand reported_;      // the last report before the coming tick
  double tokens_since_tick_ = 0;
  std::vector<int> desired_;
  std::vector<std::optional<absl::Time>> last_preemption_;
  std::vector<Preemption> preemptions_;
  size_t next_preemption_ = 0;
  size_t next_notice_ = 0;
  const double notice_s_ = absl::ToDoubleSeconds(config_.spot_notice);
  SimResult result_;
};

SimResult Engine::Run() {
  const double tick = absl::ToDoubleSeconds(config_.tick);
  // The clock starts one cold start (+ a tick) before the first possible
  // arrival, so a policy that knows the future (the oracle) can have a
  // replica ready for it; the others see no demand until then.
  // A replay of an endpoint's past starts at 0: a quiet spell before the
  // first arrival would be one the endpoint never had (and would scale its
  // replicas down), and a policy resumed from that time must not see an
  // earlier one.
  double next_tick =
      (resumed_ ? 0
                : -std::ceil((cold_starts_.Longest() + tick) / tick) * tick) +
      absl::ToDoubleSeconds(config_.tick_phase);
  last_tick_ = next_tick;
  for (size_t v = 0;
       v < std::min(desired_.size(), config_.initial_replicas.size()); ++v) {
    desired_[v] = std::max(0, config_.initial_replicas[v]);
    for (int i = 0; i < desired_[v]; ++i) {
      pool_.StartReady(static_cast<int>(v), next_tick);
    }
  }
  preemptions_ = pool_.SchedulePreemptions(next_tick, duration_s_ + 3600);
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
  const double report_lag = absl::ToDoubleSeconds(config_.activator.report_lag);
  while (next_tick <= duration_s_ || next_ < trace_.requests.size() ||
         !hold_.queue().empty() || !completions_.empty() ||
         hold_.NextRetry() < std::numeric_limits<double>::infinity()) {
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
  for (const int id : std::vector<int>(pool_.live_ids())) {
    pool_.Stop(id, end);
  }
  pool_.EndSleep(end);
  result_.wakes = pool_.wakes();
  result_.pool_changes = pool_.pool_changes();
  result_.asleep_cost_usd = pool_.asleep_cost();
  result_.woken_cost_usd = pool_.woken_cost();
  result_.cost_usd = pool_.billed_cost();
  result_.gpu_seconds = pool_.gpu_seconds();
  return std::move(result_);
}

void Engine::ProcessUntil(double until) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  for (;;) {
    const double t_arrival = next_ < trace_.requests.size()
                                 ? trace_.requests[next_].arrival_s
                                 : kNever;
    const double t_done = completions_.empty() ? kNever : completions_.top().t;
    const double t_ready = pool_.NextReady();
    const double t_preempt = next_preemption_ < preemptions_.size()
                                 ? preemptions_[next_preemption_].t
                                 : kNever;
    const double t_deadline = hold_.NextDeadline();
    const double t_retry = hold_.NextRetry();
    const double t_notice = NextNotice();
    const double t = std::min({t_arrival, t_done, t_ready, t_preempt, t_notice,
                               poke_at_, t_deadline, t_retry});
    if (t >= until) {
      return;
    }
    now_ = t;
    if (t == poke_at_) {
      // The activator's poke: the policy decides now, not at the tick.
      poke_at_ = kNever;
      ++result_.pokes;
      Tick(t, /*poke=*/true);
    } else if (t == t_notice) {
      Notice();
    } else if (t == t_preempt) {
      const Preemption& p = preemptions_[next_preemption_++];
      last_preemption_[static_cast<size_t>(p.variant)] =
          config_.epoch + absl::Seconds(p.t);
      result_.preemptions += pool_.Preempt(p);
    } else if (t == t_done) {
      Complete();
    } else if (t == t_ready) {
      if (const int id = pool_.PopReady(t); id >= 0) {
        const Replica& r = pool_.replica(id);
        if (!r.woken) {  // a wake is not a start the policy's lead learns
          cold_starts_.Learn(r.variant, r.requested_s, t);
        }
        Dispatch();
      }
    } else if (t == t_deadline) {
      Expire();
    } else if (t == t_retry) {
      const ActivatorHold::Due r = hold_.TakeRetry();
      Arrive(r.index, r.attempt);
    } else {
      const Request& req = trace_.requests[next_++];
      result_.requests += Counted(req) ? 1 : 0;
      Arrive(next_ - 1, 0);
    }
  }
}

void Engine::Complete() {
  const Completion c = completions_.top();
  completions_.pop();
  Replica& r = pool_.replica(c.replica);
  --in_flight_;
  if (r.preempted) {
    // Its replica was taken: the request starts over, first in line.
    ++result_.retried_requests;
    hold_.queue().push_front(c.request);
    Dispatch();
    return;
  }
  --r.busy;
  tokens_since_tick_ += c.output_tokens;
  if (wants_sizes_) {
    completed_sizes_.push_back(
        {c.request->input_tokens, c.request->output_tokens});
  }
  if (config_.prometheus_rate_window > absl::ZeroDuration()) {
    completed_at_.push_back(c.t);
  }
  if (r.state == Replica::State::kDraining && r.busy == 0) {
    pool_.Stop(c.replica, c.t, /*may_sleep=*/true);
  } else {
    Dispatch();
  }
}

// A request's try `attempt` (0: its first) reaches the activator now:
// refused if the hold is full (429), else held or queued until a replica
// takes it or it times out.
void Engine::Arrive(size_t index, int attempt) {
  const Request& req = trace_.requests[index];
  hold_.CountArrival(attempt);
  // What it found, by its first try: why it missed, if it does.
  const auto found = [&] {
    if (attempt == 0) {
      hold_.Found(index, pool_.ready() == 0     ? MissCause::kNoneReady
                         : pool_.starting() > 0 ? MissCause::kFullStarting
                                                : MissCause::kFullNoneAsked);
    }
  };
  if (hold_.AtBound() && !pool_.FreeSlot()) {
    found();
    // 429 + Retry-After.
    if (!RetryLater(index, attempt, policy::kRetryAfterHoldFullS) &&
        Counted(req)) {
      ++result_.rejected_requests;
    }
    return;
  }
  if (pool_.ready() == 0 && config_.activator.poke_delay &&
      poke_at_ == std::numeric_limits<double>::infinity()) {
    poke_at_ = now_ + absl::ToDoubleSeconds(*config_.activator.poke_delay);
  }
  hold_.queue().push_back(&req);
  Dispatch();
  if (!hold_.queue().empty() && hold_.queue().back() == &req) {
    found();
    // The live activator's activation timeout (policy::ActivationRule)
    // from the controller's prediction, when the activator has one.
    hold_.SetDeadline(
        index, attempt, now_,
        config_.activator.activation_timeout
            ? absl::ToDoubleSeconds(policy::ActivationRule{}.For(
                  cold_starts_.Predicted(),
                  config_.sleep.has_value() && policy_.KeepsEnginesAsleep()))
            : 0.0);
  }
}

// The client tries again `delay_s` from now if it has tries left.
bool Engine::RetryLater(size_t index, int attempt, double delay_s) {
  if (!hold_.RetryLater(index, attempt, now_, delay_s)) {
    return false;
  }
  result_.client_retries += Counted(trace_.requests[index]) ? 1 : 0;
  return true;
}

// Idle skipping: advances `next_tick` over the ticks at which nothing can
// change -- the engine is settled (nothing queued, in flight, starting or
// draining, no poke due), the last tick was quiet, and the policy promises
// its answer until QuietUntil() -- up to the next arrival (or a client's
// retry), preemption or timeline point and never past the trace's end. The
// policy is told which ticks it missed (SkipQuiet). The grid is walked by
// the same additions stepping makes, so the ticks after a skip fall at
// exactly the same times.
void Engine::SkipIdle(double& next_tick, double next_point) {
  if (!last_tick_quiet_ || !hold_.queue().empty() || !completions_.empty() ||
      in_flight_ != 0 || poke_at_ != std::numeric_limits<double>::infinity() ||
      !pool_.AllReady()) {
    return;
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
  const double horizon = std::min({until_s, t_arrival, t_preempt, NextNotice(),
                                   next_point, hold_.NextRetry()});
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

// The next waiting request stops waiting: its client hangs up, or the
// activator answers 503. It leaves the hold (or the queue). If its client
// tries again, that is a new arrival later; else it is a miss by the state
// it found on arrival, and a cold-start request if a replica was starting
// when it left.
void Engine::Expire() {
  const ActivatorHold::Deadline d = hold_.TakeDeadline(trace_.requests);
  const Request& req = trace_.requests[d.index];
  // After a 503 the client waits its Retry-After; after its own timeout,
  // the OpenAI SDKs' back-off.
  const double delay_s = d.activation
                             ? policy::kRetryAfterActivationTimeoutS
                             : std::min(8.0, 0.5 * std::ldexp(1.0, d.attempt));
  if (RetryLater(d.index, d.attempt, delay_s)) {
    return;
  }
  hold_.MarkStarted(d.index);  // it will never start: no deadline again
  if (!Counted(req)) {
    return;
  }
  ++(d.activation ? result_.activation_timeouts : result_.abandoned_requests);
  ++result_.slo_misses[hold_.cause(d.index)];
  if (pool_.starting() > 0) {
    ++result_.cold_start_requests;  // it stopped waiting for one
  }
}

// Starts queued requests on ready replicas with free slots, FIFO.
void Engine::Dispatch() {
  std::deque<const Request*>& queue = hold_.queue();
  while (!queue.empty()) {
    const int best = pool_.LeastBusyFree();
    if (best < 0) {
      return;
    }
    const Request& req = *queue.front();
    queue.pop_front();
    Replica& r = pool_.replica(best);
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
    if (!hold_.started(index)) {
      hold_.MarkStarted(index);
      const bool waited = r.ready_s > req.arrival_s;
      const bool cold = waited && !r.woken;
      if (config_.request_log) {
        config_.request_log(RequestRecord{.arrival_s = req.arrival_s,
                                          .start_s = now_,
                                          .ttft_s = ttft,
                                          .done_s = now_ + service,
                                          .cold = cold,
                                          .woke = waited && r.woken,
                                          .replica = best,
                                          .variant = r.variant});
      }
      if (Counted(req)) {
        result_.wake_requests += waited && r.woken ? 1 : 0;
        Account(req, index, ttft, tpot, cold);
      }
    }
    completions_.push({now_ + service, best, req.output_tokens, &req});
  }
}

// A measured request's first start: its cold start, TTFT and SLO.
void Engine::Account(const Request& req, size_t index, double ttft, double tpot,
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
    ++result_.slo_misses[hold_.cause(index)];
  }
}

// What a controller could observe at `t`: the demand of the activator's
// last report (ActivatorModel::report_lag; a poke's is its own, sent at
// once), the replicas of now, the cold starts learned, spot preemptions.
Observation Engine::Observe(double t, bool poke) {
  const Demand seen =
      poke || config_.activator.report_lag <= absl::ZeroDuration() ? Seen()
                                                                   : reported_;
  Observation o;
  o.now = config_.epoch + absl::Seconds(t);
  o.in_flight = seen.in_flight;
  o.queued = static_cast<double>(seen.queued);
  // Arrivals counted since the last decision's report (a report before a
  // poke's is older than the poke: nothing new).
  o.arrivals =
      static_cast<double>(std::max<int64_t>(0, seen.arrivals - counted_));
  counted_ = std::max(counted_, seen.arrivals);
  o.completed_sizes = std::move(completed_sizes_);
  completed_sizes_.clear();
  if (config_.prometheus_rate_window > absl::ZeroDuration()) {
    const double window = absl::ToDoubleSeconds(config_.prometheus_rate_window);
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
    o.variants[v].cold_start = cold_starts_.stats(static_cast<int>(v));
  }
  const double gpus_held = pool_.Observe(o.variants, config_.epoch);
  if (config_.pool_gpus > 0) {
    for (size_t v = 0; v < models_.size(); ++v) {
      o.variants[v].node_free =
          config_.pool_gpus - gpus_held >= models_[v].gpus;
    }
  }
  for (size_t v = 0; v < models_.size(); ++v) {
    if (last_preemption_[v]) {
      o.spot.push_back({config_.spec.variants[v].gpu_class, last_preemption_[v],
                        std::nullopt});
    }
  }
  return o;
}

// A tick (or a poke's decision) at `t`: the policy decides on what it
// observes, and each variant is scaled to its answer.
void Engine::Tick(double t, bool poke) {
  now_ = t;
  const Observation o = Observe(t, poke);
  if (t < hold_s_) {
    // SimConfig::initial_hold: not asked yet (what it would have observed
    // is counted as seen).
    last_tick_quiet_ = false;
    Dispatch();
    return;
  }
  last_tick_quiet_ = IsQuiet(o);
  ++result_.ticks;
  const std::vector<int> want = policy_.Tick(o);
  if (config_.sleep) {
    // Before the scale-down, so a replica it releases can sleep.
    const std::vector<int> asleep = policy_.Asleep();
    for (size_t v = 0; v < models_.size(); ++v) {
      pool_.KeepAsleep(static_cast<int>(v), v < asleep.size() ? asleep[v] : 0,
                       t);
    }
  }
  const double g = absl::ToDoubleSeconds(config_.billing_granularity);
  const bool by_paid =
      policy_.RemoveByPaidTime() && g > absl::ToDoubleSeconds(config_.tick);
  int total = 0;
  for (size_t v = 0; v < models_.size() && v < want.size(); ++v) {
    const int w = std::max(0, want[v]);
    if (w != desired_[v]) {
      result_.scale_events += t >= measure_from_s_ ? 1 : 0;
      desired_[v] = w;
    }
    ScaleVariant(static_cast<int>(v), w, by_paid);
    total += w;
  }
  pool_.ReleaseLeaving(desired_, now_);
  result_.peak_replicas = std::max(result_.peak_replicas, total);
  Dispatch();
}

// Variant `variant` to `want` replicas now (ReplicaPool::Scale), starting
// the ones it lacks.
void Engine::ScaleVariant(int variant, int want, bool by_paid) {
  for (int n = pool_.Scale(variant, want, now_, by_paid); n > 0; --n) {
    pool_.Start(variant, now_, cold_starts_.Draw(variant));
  }
}

// A preemption's notice (SimConfig::spot_notice): its replicas are leaving
// and count as a preemption for spot health; the replicas last asked for
// are started in their place at once, as the controller's reconcile on the
// node event does with its last decision.
void Engine::Notice() {
  const Preemption& p = preemptions_[next_notice_++];
  last_preemption_[static_cast<size_t>(p.variant)] =
      config_.epoch + absl::Seconds(now_);
  result_.noticed += pool_.Notice(p);
  for (size_t v = 0; v < models_.size(); ++v) {
    ScaleVariant(static_cast<int>(v), desired_[v], /*by_paid=*/false);
  }
  pool_.ReleaseLeaving(desired_, now_);
}

void Engine::Point(double t) {
  TimelinePoint p;
  p.t_s = t;
  p.demand = in_flight_ + static_cast<double>(hold_.queue().size());
  p.replicas = pool_.live();
  for (int id : pool_.live_ids()) {
    p.ready += pool_.replica(id).state == Replica::State::kReady ? 1 : 0;
  }
  p.cold_starts = result_.cold_start_requests;
  // Cost so far: billed replicas + the running ones up to now.
  p.cost_usd = pool_.billed_cost() + pool_.RunningCost(t);
  result_.timeline.push_back(p);
}

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
  const bool service_times =
      std::any_of(requests.requests.begin(), requests.requests.end(),
                  [](const Request& r) { return r.service_s >= 0; });
  Engine e(requests, duration_s, config, models, policy, progress,
           service_times);
  return e.Run();
}

}  // namespace pilotlight::sim
