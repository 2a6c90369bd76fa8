#include "controller/sim/retuned_policy.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/sim/simulator.h"
#include "controller/sim/traffic_record.h"

namespace pilotlight::sim {

namespace {

// A busy endpoint's replay is cut to max_replayed_requests, down to this.
constexpr absl::Duration kShortestWindow = absl::Minutes(5);
// A replay starts with the replicas the endpoint had and none of the
// requests it had in flight; it keeps those replicas this long while they
// come back (LLM requests run for seconds to a minute or two).
constexpr absl::Duration kRefill = absl::Minutes(2);

// What one candidate's replay of the past gave.
struct Replayed {
  double cost = 0;
  double attainment = 0;
  double cold = 0;
  bool eligible = true;
};

class RetunedPolicy final : public ScalingPolicy {
 public:
  RetunedPolicy(const PolicyContext& ctx, RetuneOptions options,
                std::vector<ScalingPolicyPtr> live)
      : config_(*ctx.config),
        models_(*ctx.models),
        service_times_(ctx.service_times),
        options_(std::move(options)),
        live_(std::move(live)),
        record_(RecordOptions()) {
    // The replays write no logs (their warm-up is set per replay).
    replay_config_ = config_;
    replay_config_.decision_log = nullptr;
    replay_config_.request_log = nullptr;
  }

  std::string name() const override { return "pilotlight-retuned"; }

  std::vector<int> Tick(const Observation& o) override {
    record_.Add(o.now, static_cast<int64_t>(std::llround(o.arrivals)));
    for (const Observation::RequestSize& s : o.completed_sizes) {
      record_.AddSize(s.input_tokens, s.output_tokens);
    }
    if (last_now_) {
      busy_seconds_ += o.in_flight * absl::ToDoubleSeconds(o.now - *last_now_);
    }
    arrivals_ += o.arrivals;
    last_now_ = o.now;
    RecordReplicas(o);
    std::vector<int> chosen;
    for (size_t i = 0; i < live_.size(); ++i) {
      std::vector<int> out = live_[i]->Tick(o);
      if (i == followed_) {
        chosen = std::move(out);
      }
    }
    if (!next_retune_) {
      next_retune_ = o.now + options_.every;
      TakeSnapshot(o);
    } else if (o.now >= *next_retune_) {
      Retune(o.now);
      next_retune_ = o.now + options_.every;
      TakeSnapshot(o);
    }
    return chosen;
  }

  absl::Time QuietUntil() const override {
    absl::Time until = next_retune_.value_or(absl::InfinitePast());
    for (const ScalingPolicyPtr& p : live_) {
      until = std::min(until, p->QuietUntil());
    }
    return until;
  }

  void SkipQuiet(absl::Time first, absl::Duration step, int64_t n) override {
    for (const ScalingPolicyPtr& p : live_) {
      p->SkipQuiet(first, step, n);
    }
    if (n > 0) {
      const absl::Time last = first + step * (n - 1);
      record_.Observe(last);
      last_now_ = last;
    }
  }

  bool RemoveByPaidTime() const override {
    return live_[followed_]->RemoveByPaidTime();
  }

  bool WantsRequestSizes() const override { return true; }

  bool KeepsEnginesAsleep() const override {
    return live_[followed_]->KeepsEnginesAsleep();
  }
  std::vector<int> Asleep() const override {
    return live_[followed_]->Asleep();
  }

 private:
  static TrafficRecordOptions RecordOptions() {
    TrafficRecordOptions o;
    // The replay has no gaps: idle skipping stands for the ticks it skips.
    o.max_look_gap = absl::InfiniteDuration();
    return o;
  }

  // The Ready replicas per variant: a replay of the past starts from those
  // the endpoint had when that past began. While the endpoint is quiet
  // (ticks skipped) they do not change.
  void RecordReplicas(const Observation& o) {
    std::vector<int> ready(o.variants.size());
    for (size_t v = 0; v < ready.size(); ++v) {
      ready[v] = o.variants[v].ready;
    }
    replicas_.Record(o.now, std::move(ready));
  }

  // The record of the past `window`, its requests sized as the engines'
  // token histograms counted them (before any completed: the spec's
  // typical size), and with service times the mean by Little's law.
  EndpointTrace Past(absl::Time now, absl::Duration window) const {
    return RecordedPast(
        record_, now, window, config_.spec,
        service_times_ ? std::optional<double>(
                             arrivals_ > 0 ? busy_seconds_ / arrivals_ : 1.0)
                       : std::nullopt);
  }

  bool Meets(const Replayed& r) const {
    return r.attainment >=
               options_.target_attainment + options_.attainment_margin &&
           r.cold <= options_.cold_budget_share *
                         config_.spec.slo.max_cold_start_fraction;
  }

  // Every candidate as it is now, and the Ready replicas: a later replay
  // resumes them from here.
  void TakeSnapshot(const Observation& o) {
    Snapshot snap;
    snap.at = o.now;
    for (const policy::VariantState& v : o.variants) {
      snap.replicas.push_back(v.ready);
    }
    for (const ScalingPolicyPtr& p : live_) {
      snap.candidates.push_back(p->Clone());
    }
    snapshots_.push_back(std::move(snap));
    while (static_cast<int>(snapshots_.size()) > options_.snapshots) {
      snapshots_.pop_front();
    }
  }

  void Retune(absl::Time now) {
    const absl::Duration covered = record_.Covered();
    if (covered < options_.min_history) {
      return;  // too little history: the one followed stays
    }
    std::vector<Replayed> results;
    if (!ReplayFromSnapshot(now, results) && !ReplayFresh(now, results)) {
      // Too few requests, or too short a past, to tell candidates apart
      // on the cold-start budget: the defaults.
      followed_ = 0;
      return;
    }
    // A switch needs the same choice at `confirm` retunes in a row: one
    // replay's luck does not move the endpoint.
    const size_t choice = Choose(results);
    if (choice == followed_ || choice != pending_) {
      pending_ = choice;
      pending_count_ = 1;
    } else {
      ++pending_count_;
    }
    if (choice != followed_ && pending_count_ >= options_.confirm) {
      followed_ = choice;
    }
  }

  // Replays the past since the oldest snapshot whose replay fits the
  // request budget, each candidate resumed from its copy there -- what it
  // had learned, as it runs -- and the replicas the endpoint had; the
  // requests of the refill before it are replayed unmeasured, the copies
  // not yet asked. False: no snapshot's past fits the budget, or the one
  // that does holds fewer than min_replayed_requests or spans less than
  // min_replayed_span.
  bool ReplayFromSnapshot(absl::Time now, std::vector<Replayed>& results) {
    const Snapshot* from = nullptr;
    for (const Snapshot& snap : snapshots_) {
      if (snap.at < now && snap.at >= record_.covered_since() &&
          record_.ArrivalsBetween(snap.at, now) <=
              options_.max_replayed_requests) {
        from = &snap;
        break;
      }
    }
    if (from == nullptr || now - from->at < options_.min_replayed_span ||
        record_.ArrivalsBetween(from->at, now) <
            options_.min_replayed_requests) {
      return false;
    }
    const bool up = std::any_of(from->replicas.begin(), from->replicas.end(),
                                [](int n) { return n > 0; });
    const absl::Duration lead =
        up ? std::min(kRefill, from->at - record_.covered_since())
           : absl::ZeroDuration();
    SimConfig c = replay_config_;
    c.epoch = from->at - lead;
    c.initial_replicas = from->replicas;
    // The copies answered the snapshot's own tick: first asked at the next.
    c.initial_hold = lead + c.tick;
    c.warmup = lead;
    const EndpointTrace past = Past(now, now - c.epoch);
    const double duration = absl::ToDoubleSeconds(now - c.epoch);
    for (size_t i = 0; i < from->candidates.size(); ++i) {
      ScalingPolicyPtr p =
          from->candidates[i] ? from->candidates[i]->Clone() : nullptr;
      if (!p) {
        results.push_back({.eligible = i == 0});
        continue;
      }
      const SimResult r = SimulateEndpoint(past, duration, c, models_, *p);
      results.push_back({r.cost_usd, SloAttainment(r), ColdStartFraction(r)});
    }
    return true;
  }

  // Without a snapshot to resume from: fresh candidates over as much of the
  // record as the request budget allows (ReplayPast). False: too few
  // requests measured, or too short a past.
  bool ReplayFresh(absl::Time now, std::vector<Replayed>& results) {
    const std::optional<PastReplay> r = ReplayPast(
        record_, now, replay_config_, models_, service_times_, options_,
        [&](absl::Duration window) { return Past(now, window); }, replicas_);
    if (!r) {
      return false;
    }
    for (const ReplayedCandidate& x : r->candidates) {
      results.push_back({x.cost_usd, x.attainment, x.cold, x.eligible});
    }
    return true;
  }

  // As good as the defaults (candidate 0) on the same replay: within the
  // target (with its margin) or at least the defaults' attainment, and
  // within the cold-start budget (its share) or at most the defaults' cold
  // share. A paired comparison: both replays met the same arrivals.
  bool AsGood(const Replayed& c, const Replayed& ref) const {
    const double att = std::min(ref.attainment, options_.target_attainment +
                                                    options_.attainment_margin);
    const double cold =
        std::max(ref.cold, options_.cold_budget_share *
                               config_.spec.slo.max_cold_start_fraction);
    return c.attainment >= att && c.cold <= cold;
  }

  // The cheapest that meets the target with its margin; with none, the
  // cheapest as good as the defaults. The one followed stays while it
  // qualifies so and the choice saves less than switch_saving.
  size_t Choose(const std::vector<Replayed>& r) const {
    bool any_meets = false;
    for (const Replayed& x : r) {
      any_meets = any_meets || (x.eligible && Meets(x));
    }
    const auto qualifies = [&](size_t i) {
      if (!r[i].eligible) {
        return false;
      }
      return any_meets ? Meets(r[i]) : i == 0 || AsGood(r[i], r[0]);
    };
    std::optional<size_t> best;
    for (size_t i = 0; i < r.size(); ++i) {
      if (qualifies(i) && (!best || r[i].cost < r[*best].cost)) {
        best = i;
      }
    }
    if (*best != followed_ && qualifies(followed_) &&
        r[*best].cost > (1 - options_.switch_saving) * r[followed_].cost) {
      return followed_;
    }
    return *best;
  }

  const SimConfig& config_;
  const std::vector<ServiceModel>& models_;
  const bool service_times_;
  const RetuneOptions options_;
  std::vector<ScalingPolicyPtr> live_;
  SimConfig replay_config_;
  TrafficRecord record_;
  size_t followed_ = 0;
  size_t pending_ = 0;  // the choice awaiting confirmation
  int pending_count_ = 0;
  std::optional<absl::Time> next_retune_;
  ReplicaHistory replicas_;
  // At the last `snapshots` retunes, oldest first.
  struct Snapshot {
    absl::Time at;
    std::vector<int> replicas;  // Ready, per variant
    std::vector<ScalingPolicyPtr> candidates;
  };
  std::deque<Snapshot> snapshots_;
  std::optional<absl::Time> last_now_;
  double busy_seconds_ = 0;
  double arrivals_ = 0;
};

}  // namespace

EndpointTrace RecordedPast(const TrafficRecord& record, absl::Time now,
                           absl::Duration window,
                           const policy::EndpointSpec& spec,
                           std::optional<double> service_s) {
  EndpointTrace t = record.Replay(now - window, now, spec.name);
  const bool sized = record.has_sizes();
  for (Request& r : t.requests) {
    if (!sized) {
      r.input_tokens = static_cast<uint32_t>(spec.workload.prompt_tokens);
      r.output_tokens = static_cast<uint32_t>(spec.workload.output_tokens);
    }
    if (service_s) {
      r.service_s = static_cast<float>(*service_s);
    }
  }
  return t;
}

std::optional<PastReplay> ReplayPast(
    const TrafficRecord& record, absl::Time now, const SimConfig& config,
    const std::vector<ServiceModel>& models, bool service_times,
    const RetuneOptions& options,
    const std::function<EndpointTrace(absl::Duration)>& past,
    const ReplicaHistory& replicas) {
  // The replay covers as much of the record as the request budget allows
  // (a sparse endpoint's whole day, a busy one's last minutes).
  absl::Duration window =
      std::min(record.Covered(), options.max_replayed_window);
  while (window > kShortestWindow && record.ArrivalsBetween(now - window, now) >
                                         options.max_replayed_requests) {
    window = std::max(kShortestWindow, window / 2);
  }
  // What each candidate remembers (the same for every instance of it).
  std::vector<absl::Duration> memory;
  {
    const EndpointTrace none;
    PolicyContext ctx{&config, &models, &none, service_times, std::nullopt};
    for (const RetuneCandidate& c : options.candidates) {
      ctx.knob = c.knob;
      absl::StatusOr<ScalingPolicyPtr> p = MakePolicy(c.policy, ctx);
      if (!p.ok()) {
        return std::nullopt;  // checked when the candidates were made
      }
      memory.push_back((*p)->Memory());
    }
  }
  // The warm-up rebuilds what the candidates remember (the longest
  // keep-alive, a stabilisation window) after the replicas refill, and
  // takes at most half the replay.
  absl::Duration longest = absl::ZeroDuration();
  for (const absl::Duration m : memory) {
    longest = std::max(longest, std::min(m, window));
  }
  SimConfig c = config;
  c.warmup = std::min(std::max(options.warmup, longest + kRefill), window / 2);
  c.initial_hold = std::min(kRefill, c.warmup / 2);
  PastReplay out;
  out.window = window;
  out.warmup = c.warmup;
  out.measured_requests = record.ArrivalsBetween(now - window + c.warmup, now);
  if (window - c.warmup < options.min_replayed_span ||
      out.measured_requests < options.min_replayed_requests) {
    return std::nullopt;
  }
  c.initial_replicas = replicas.At(now - window);
  const EndpointTrace trace = past(window);
  const double duration = absl::ToDoubleSeconds(window);
  PolicyContext ctx{&c, &models, &trace, service_times, std::nullopt};
  // A candidate that remembers more than the warm-up rebuilt is not
  // replayed as it runs: it cannot be chosen (the first always can).
  const absl::Duration rebuilt = c.warmup - c.initial_hold;
  for (size_t i = 0; i < options.candidates.size(); ++i) {
    ctx.knob = options.candidates[i].knob;
    absl::StatusOr<ScalingPolicyPtr> fresh =
        MakePolicy(options.candidates[i].policy, ctx);
    if (!fresh.ok()) {
      return std::nullopt;
    }
    const SimResult r = SimulateEndpoint(trace, duration, c, models, **fresh);
    out.candidates.push_back({r.cost_usd, SloAttainment(r),
                              ColdStartFraction(r),
                              i == 0 || memory[i] <= rebuilt});
  }
  return out;
}

std::vector<RetuneCandidate> DefaultRetuneCandidates() {
  return {{"pilotlight", 1.0},   {"pilotlight", 0.7},   {"pilotlight", 0.5},
          {"keepalive-10m", 1},  {"keepalive-10m", 2},  {"keepalive-10m", 5},
          {"keepalive-10m", 10}, {"keepalive-10m", 20}, {"keepalive-10m", 60},
          {"knative", 0.7},      {"keda", 0.7},         {"keda", 0.4}};
}

absl::StatusOr<ScalingPolicyPtr> MakeRetunedPolicy(const PolicyContext& ctx,
                                                   RetuneOptions options) {
  if (options.candidates.empty()) {
    return absl::InvalidArgumentError("pilotlight-retuned: no candidates");
  }
  // The live candidates see what the policy sees, never the trace.
  PolicyContext live_ctx = ctx;
  live_ctx.trace = nullptr;
  std::vector<ScalingPolicyPtr> live;
  for (const RetuneCandidate& c : options.candidates) {
    live_ctx.knob = c.knob;
    absl::StatusOr<ScalingPolicyPtr> p = MakePolicy(c.policy, live_ctx);
    if (!p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pilotlight-retuned: candidate ", c.policy, ": ",
                       p.status().message()));
    }
    live.push_back(*std::move(p));
  }
  return ScalingPolicyPtr(
      new RetunedPolicy(ctx, std::move(options), std::move(live)));
}

}  // namespace pilotlight::sim
