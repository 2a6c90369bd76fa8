// The live-versus-simulated replay (pilotlight-replay, docs/replay.md): one
// slice of a trace sent through the activator into the local test cluster,
// and the same slice through `pilotlight simulate`, compared side by side.
//
// This header holds the parts that are arithmetic on what was recorded --
// the per-request records, the replica timeline, the summary both sides are
// reduced to, and the comparison -- so they are tested without a cluster
// (replay_test.cc). The live run itself is in main.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pilotlight::tools {

// One request as the replay saw it; times in seconds from the slice start.
struct RequestRecord {
  double due_s = 0;          // its arrival in the trace slice
  double sent_s = 0;         // when it went out (late when all senders busy)
  double first_byte_s = -1;  // first body byte (the first streamed token)
  double done_s = -1;
  int status = 0;     // HTTP status; 0: no answer (connection error)
  bool cold = false;  // X-Pilotlight-Cold-Start: true
  double held_s = 0;  // X-Pilotlight-Held-Ms
  uint32_t prompt_tokens = 0;
  uint32_t output_tokens = 0;
  bool body_ok = false;  // a complete stream ending in data: [DONE]
};

// Replicas over time: requested and not gone (a terminating pod still
// counts, as a draining replica does in the simulator), and Ready ones.
struct TimelineSample {
  double t_s = 0;
  int replicas = 0;
  int ready = 0;
};

// The figures both sides are reduced to, over [0, window_s). Counts are
// doubles: the median of an even number of simulated runs may fall between
// two counts (81.5 cold-start requests), and is compared as such.
struct ReplaySummary {
  double requests = 0;
  double answered = 0;  // 200 with a complete body
  double cold_start_requests = 0;
  double scale_events = 0;
  double replica_seconds = 0;
  double ttft_p50_s = 0;
  double ttft_p99_s = 0;
  double ttft_attainment = 0;  // share of requests with TTFT <= the SLO
  double cost_usd = 0;
};

// Every figure of a ReplaySummary once, by the name the comparison prints;
// `compared`: a row of the comparison (`answered` is checked on its own).
struct SummaryField {
  const char* name;
  double ReplaySummary::*field;
  bool compared;
};
const std::vector<SummaryField>& SummaryFields();

// The integral of `replicas` over [0, window_s), each sample holding until
// the next (the last one until window_s); before the first sample, zero.
double ReplicaSeconds(const std::vector<TimelineSample>& timeline,
                      double window_s);

// Quantile q of `v` (nearest rank, on a sorted copy); 0 when empty.
double Quantile(std::vector<double> v, double q);

// The live side's summary. TTFT = first byte - due (what the client waited
// from the moment the trace says it asked); a request never answered counts
// as outside the SLO. Cost = replica-seconds x the class's hourly price.
ReplaySummary SummariseLive(const std::vector<RequestRecord>& requests,
                            const std::vector<TimelineSample>& timeline,
                            int64_t scale_events, double window_s,
                            double ttft_slo_s, double price_per_hour);

// Cold starts from the pods sampled every 250 ms: from the sample that
// first shows a pod to the first that shows it Ready. Both ends lag their
// event by up to one sampling period, so the difference is unbiased at that
// resolution -- where the API server's timestamps (1 s) made a 10.3 s start
// read 11 s. A pod first seen Ready is not counted (its start was missed).
class ColdStartTracker {
 public:
  void Observe(double t_s, const std::string& pod, bool ready);
  const std::vector<double>& cold_starts() const { return cold_starts_; }

 private:
  std::map<std::string, double> first_seen_;  // pods not yet seen Ready
  std::set<std::string> done_;
  std::vector<double> cold_starts_;
};

// The phase (in [0, tick_s)) of a live controller's ticks against the
// slice, from the times of its decisions (seconds from the slice start):
// the median phase of those within 50 ms of the most common one. The
// controller also decides between ticks (activator pokes and reports), so
// the phase needs most decisions to agree: nullopt with fewer than 10
// decisions or under half of them within 50 ms of each other.
std::optional<double> TickPhase(const std::vector<double>& decision_times_s,
                                double tick_s);

// One demand sample of the live controller (its decision log): seconds
// from the slice start, requests in flight + held.
struct DemandSample {
  double t_s = 0;
  double concurrency = 0;
};

// How old the live controller's demand was when it decided: the lag, in
// 50 ms steps in [0, max_lag_s), at which the requests' own concurrency
// (sent -> done, as the activator counts them) best matches the samples
// (least mean absolute difference; the smaller lag on a tie). The
// activator reports once a second at its own phase, so the lag is where
// its reports fall before the controller's ticks. nullopt with fewer than
// 20 samples.
std::optional<double> ReportLag(const std::vector<RequestRecord>& records,
                                const std::vector<DemandSample>& samples,
                                double max_lag_s);

// requests.csv and live_timeline.csv (what WriteFiles writes, what
// --resimulate reads back). A malformed row is an error naming its line.
std::string RequestsCsv(const std::vector<RequestRecord>& records);
absl::StatusOr<std::vector<RequestRecord>> ParseRequestsCsv(
    const std::string& text);
std::string TimelineCsv(const std::vector<TimelineSample>& timeline);
absl::StatusOr<std::vector<TimelineSample>> ParseTimelineCsv(
    const std::string& text);

// The median (the mean of the middle two of an even count); 0 when empty.
double Median(std::vector<double> v);

// The simulator's runs of one slice (tick phases and cold-start draws the
// live run cannot pin down): per figure, the median, least and most.
struct SimSpread {
  ReplaySummary median;
  ReplaySummary min;
  ReplaySummary max;
};
SimSpread Spread(const std::vector<ReplaySummary>& runs);

// (live - sim) / sim; 0 when both are 0, and +-1 when only sim is 0 (a
// difference from nothing is as large as the comparison can say).
double RelativeDifference(double live, double sim);

struct ComparedRow {
  std::string name;
  double live = 0;
  double sim = 0;  // the simulated runs' median
  double sim_min = 0;
  double sim_max = 0;
  double diff = 0;  // RelativeDifference(live, sim)
  bool InSpread() const { return live >= sim_min && live <= sim_max; }
  // 0 within the simulated runs' range; else RelativeDifference against its
  // nearer end: how far the live figure lies from every simulated run.
  double BeyondSpread() const;
};
std::vector<ComparedRow> Compare(const ReplaySummary& live,
                                 const SimSpread& sim);
void PrintComparison(const std::vector<ComparedRow>& rows, std::ostream& out);

// A self-contained HTML page: the two replica timelines (and Ready ones)
// overlaid, and the comparison table.
std::string ComparisonHtml(const std::string& title,
                           const std::vector<TimelineSample>& live,
                           const std::vector<TimelineSample>& sim,
                           const std::vector<ComparedRow>& rows,
                           double window_s);

}  // namespace pilotlight::tools
