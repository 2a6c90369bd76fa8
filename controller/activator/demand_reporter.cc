#include "controller/activator/demand_reporter.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "controller/process/log.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "pilotlight/v1/demand.grpc.pb.h"

namespace pilotlight::activator {

// One controller replica: its thread, and the pokes it still has to send.
struct DemandReporter::Stream {
  std::string address;
  std::thread thread;
  std::mutex mu;
  std::condition_variable wake;
  std::set<std::string> poked;
  std::optional<absl::Time> poked_at;  // the oldest poke not acknowledged
  int64_t poke_sequence = -1;          // the report that carried it
  std::atomic<bool> stop{false};       // this controller went away
};

DemandReporter::DemandReporter(ReporterOptions options, const Router& router,
                               Metrics& metrics)
    : options_(std::move(options)),
      router_(router),
      metrics_(metrics),
      incarnation_(absl::ToUnixMicros(absl::Now())) {}

DemandReporter::~DemandReporter() {
  stop_ = true;
  const std::lock_guard<std::mutex> lock(streams_mu_);
  for (auto& s : streams_) {
    s->wake.notify_all();
  }
  for (auto* list : {&streams_, &retired_}) {
    for (auto& s : *list) {
      if (s->thread.joinable()) {
        s->thread.join();
      }
    }
  }
}

void DemandReporter::Start() { SetControllers(options_.controllers); }

void DemandReporter::SetControllers(const std::vector<std::string>& addresses) {
  const std::lock_guard<std::mutex> lock(streams_mu_);
  const std::set<std::string> want(addresses.begin(), addresses.end());
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (want.contains((*it)->address)) {
      ++it;
      continue;
    }
    (*it)->stop = true;  // its thread ends after its current write
    (*it)->wake.notify_all();
    retired_.push_back(std::move(*it));
    it = streams_.erase(it);
  }
  for (const std::string& a : want) {
    if (std::none_of(streams_.begin(), streams_.end(),
                     [&](const auto& s) { return s->address == a; })) {
      auto s = std::make_unique<Stream>();
      s->address = a;
      s->thread = std::thread([this, &st = *s] { Run(st); });
      streams_.push_back(std::move(s));
    }
  }
}

void DemandReporter::Poke(const std::string& endpoint) {
  metrics_.pokes.Increment();
  const std::lock_guard<std::mutex> streams(streams_mu_);
  for (auto& s : streams_) {
    const std::lock_guard<std::mutex> lock(s->mu);
    s->poked.insert(endpoint);
    if (!s->poked_at) {
      s->poked_at = absl::Now();
    }
    s->wake.notify_all();
  }
}

void DemandReporter::Drain() {
  draining_ = true;
  {
    const std::lock_guard<std::mutex> lock(streams_mu_);
    for (auto& s : streams_) {
      s->wake.notify_all();
    }
  }
  // Each stream sends its draining report and closes; wait a little.
  const absl::Time until = absl::Now() + absl::Seconds(2);
  while (connected_.load() > 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  stop_ = true;
  const std::lock_guard<std::mutex> lock(streams_mu_);
  for (auto& s : streams_) {
    s->wake.notify_all();
  }
}

namespace {

void Fill(v1::EndpointDemand& e, const EndpointDemand& l) {
  const size_t slash = l.endpoint.find('/');
  e.set_namespace_(l.endpoint.substr(0, slash));
  e.set_name(l.endpoint.substr(slash + 1));
  e.set_arrivals_total(l.arrivals_total);
  e.set_in_flight(l.in_flight);
  e.set_held(l.held);
  e.set_held_bytes(l.held_bytes);
  e.set_oldest_wait_seconds(l.oldest_wait_seconds);
  e.set_no_replica(l.no_replica);
  e.set_wakes_refused_total(l.wakes_refused_total);
}

}  // namespace

// Acknowledgements: the stream is up; a poke reached the controller.
void DemandReporter::ReadAcks(Stream& s, AckReader& stream,
                              std::atomic<bool>& acked) {
  v1::DemandAck ack;
  while (stream.Read(&ack)) {
    if (!acked.exchange(true)) {
      ++connected_;
      metrics_.controllers.Increment();
    }
    const std::lock_guard<std::mutex> lock(s.mu);
    if (s.poked_at && s.poke_sequence >= 0 &&
        ack.sequence() >= s.poke_sequence) {
      metrics_.poke_ack.Observe(
          absl::ToDoubleSeconds(absl::Now() - *s.poked_at));
      s.poked_at.reset();
      s.poke_sequence = -1;
    }
  }
}

// Waits until a report is due -- a poke (partial: the poked endpoints), the
// interval or draining (full: every endpoint seen) -- and fills `r`; false
// when stopping. The first report on a stream is full.
bool DemandReporter::NextReport(Stream& s, bool first, int64_t sequence,
                                absl::Time& next_full, v1::DemandReport& r) {
  const auto stopping = [&] { return stop_.load() || s.stop.load(); };
  std::unique_lock<std::mutex> lock(s.mu);
  s.wake.wait_until(lock, absl::ToChronoTime(next_full), [&] {
    return stopping() || draining_ || !s.poked.empty() ||
           absl::Now() >= next_full;
  });
  if (stopping()) {
    return false;
  }
  r.set_activator(options_.name);
  r.set_incarnation(incarnation_);
  r.set_sequence(sequence);
  const absl::Time now = absl::Now();
  if (!first && !draining_ && !s.poked.empty() && now < next_full) {
    for (const std::string& ep : s.poked) {
      Fill(*r.add_endpoints(), router_.DemandOf(ep, now));
    }
  } else {
    r.set_full(true);
    for (const EndpointDemand& l : router_.Demand(now)) {
      Fill(*r.add_endpoints(), l);
    }
    next_full = now + options_.interval;
  }
  if (s.poked_at && s.poke_sequence < 0) {
    s.poke_sequence = sequence;
  }
  s.poked.clear();
  r.set_draining(draining_.load());
  return true;
}

void DemandReporter::Run(Stream& s) {
  absl::Duration backoff = absl::Milliseconds(100);
  auto channel =
      grpc::CreateChannel(s.address, grpc::InsecureChannelCredentials());
  auto stub = v1::Demand::NewStub(channel);
  const auto stopping = [&] { return stop_.load() || s.stop.load(); };
  while (!stopping()) {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::DemandReport, v1::DemandAck>>
        stream = stub->Report(&ctx);
    std::atomic<bool> acked{false};
    // Acknowledgements: the stream is up; a poke reached the controller.
    std::thread reader([&] { ReadAcks(s, *stream, acked); });
    int64_t sequence = 0;
    bool full = true;  // the first report on a stream is full
    absl::Time next_full = absl::Now();
    bool ok = true;
    bool said_goodbye = false;
    while (ok && !stopping()) {
      v1::DemandReport r;
      if (!NextReport(s, full, ++sequence, next_full, r)) {
        break;
      }
      full = false;
      ok = stream->Write(r);
      if (ok && r.draining()) {
        said_goodbye = true;
        break;
      }
    }
    stream->WritesDone();
    const grpc::Status st = stream->Finish();
    reader.join();
    if (acked) {
      --connected_;
      metrics_.controllers.Decrement();
    }
    if (said_goodbye) {
      return;
    }
    if (stopping()) {
      return;
    }
    process::LogJson("warn", "demand stream to the controller broke; retrying",
                     {{"controller", s.address},
                      {"error", st.error_message()},
                      {"retry_in_ms", absl::ToInt64Milliseconds(backoff)}});
    std::unique_lock<std::mutex> lock(s.mu);
    s.wake.wait_for(lock, absl::ToChronoMilliseconds(backoff),
                    [&] { return stopping(); });
    backoff = acked ? absl::Milliseconds(100)
                    : std::min(backoff * 2, absl::Seconds(2));
  }
}

}  // namespace pilotlight::activator
