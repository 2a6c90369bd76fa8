// Request traces for the simulator: one in-memory representation and the
// readers for the formats users bring. Every reader counts the rows it could
// not use (with the first few line numbers and why) instead of dropping them
// silently, and refuses a file that is not a trace with a clear message.
//
// Formats (auto-detected from the content, or forced with TraceFormat):
//   azure     Azure LLM inference 2023: TIMESTAMP,ContextTokens,GeneratedTokens
//   mooncake  Mooncake JSONL: {"timestamp" (ms), "input_length",
//   "output_length"} alibaba   Alibaba GenTD26 request trace: one endpoint per
//   base model
//             (checkpoint_model_version_id), exec_time_seconds as service time
//   servegen  ServeGen per-client rate files (a .tar.gz of chunk-*-trace.csv,
//             or one such file): one endpoint per client; arrivals sampled
//             per 10-minute window (see servegen.h)
//   csv       timestamp,endpoint,input_tokens,output_tokens[,service_seconds]
// Files ending in .gz are gunzipped; .tar.gz archives are read member by
// member.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/sim/archive.h"

namespace pilotlight::sim {

enum class TraceFormat { kAuto, kAzure, kMooncake, kAlibaba, kServeGen, kCsv };

absl::string_view TraceFormatName(TraceFormat f);
absl::StatusOr<TraceFormat> ParseTraceFormat(absl::string_view name);

struct Request {
  double arrival_s = 0;  // seconds from the trace start
  uint32_t input_tokens = 0;
  uint32_t output_tokens = 0;
  float service_s = -1;  // the trace's own service time; < 0 = none
};

struct BadRows {
  int64_t count = 0;
  std::vector<std::string> examples;  // "line 17: ContextTokens 'x' ..."
  void Add(int64_t line, absl::string_view why);
};

// One endpoint's requests, sorted by arrival.
struct EndpointTrace {
  std::string name;
  std::vector<Request> requests;
};

struct Trace {
  std::string path;
  TraceFormat format = TraceFormat::kAuto;
  // Every endpoint by name. For rate traces (ServeGen) the requests are
  // empty and `generate(i)` samples endpoint i's requests on demand, so a
  // day of a billion-request model never sits in memory at once.
  std::vector<EndpointTrace> endpoints;
  std::function<EndpointTrace(size_t)> generate;
  // The requests of endpoint i (a copy of the stored ones, or generated).
  EndpointTrace Endpoint(size_t i) const {
    return generate ? generate(i) : endpoints[i];
  }
  double duration_s = 0;  // last arrival - first (or the rate files' span)
  BadRows bad;
  int64_t stored_requests() const;  // 0 for rate traces until generated
};

// Bounds on a trace's timestamps. One corrupted row (a changed year, or
// nanoseconds where milliseconds were meant) must be an error naming its
// line, not a replay of years of empty time.
struct TraceChecks {
  // The longest first-to-last span admitted; 0 = no bound.
  double max_span_s = 31 * 86400.0;
  // Refuse a few rows cut off from all the others by a gap of more than a
  // day and 10x the others' span.
  bool reject_isolated = true;
};

// A row's time (seconds) and the line it was read from.
struct RowTime {
  double t = 0;
  int64_t line = 0;
};

// OK when the rows pass `checks`; else InvalidArgument naming the line.
absl::Status CheckSpan(std::vector<RowTime> rows, const TraceChecks& checks);

// Parsers over text already read (pure; tests feed strings).
absl::StatusOr<Trace> ParseAzure(absl::string_view text,
                                 const TraceChecks& checks = {});
absl::StatusOr<Trace> ParseMooncake(absl::string_view text,
                                    const TraceChecks& checks = {});
absl::StatusOr<Trace> ParseAlibaba(absl::string_view text,
                                   const TraceChecks& checks = {});
absl::StatusOr<Trace> ParseCsv(absl::string_view text,
                               const TraceChecks& checks = {});

// Detects the format from the first line (servegen needs the file name or a
// tar archive, see servegen.h).
TraceFormat DetectFormat(absl::string_view first_line);

// "YYYY-MM-DD HH:MM:SS[.fffffff]" as seconds since the Unix epoch (UTC).
bool ParseDateTime(absl::string_view s, double* seconds);

}  // namespace pilotlight::sim
