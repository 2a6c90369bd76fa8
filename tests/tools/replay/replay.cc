#include "tests/tools/replay/replay.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace pilotlight::tools {

const std::vector<SummaryField>& SummaryFields() {
  static const auto* const fields = new std::vector<SummaryField>{
      {"requests", &ReplaySummary::requests, true},
      {"answered", &ReplaySummary::answered, false},
      {"replica-seconds", &ReplaySummary::replica_seconds, true},
      {"cold-start requests", &ReplaySummary::cold_start_requests, true},
      {"scale events", &ReplaySummary::scale_events, true},
      {"TTFT p50 (s)", &ReplaySummary::ttft_p50_s, true},
      {"TTFT p99 (s)", &ReplaySummary::ttft_p99_s, true},
      {"TTFT SLO attainment", &ReplaySummary::ttft_attainment, true},
      {"cost (USD)", &ReplaySummary::cost_usd, true},
  };
  return *fields;
}

double ReplicaSeconds(const std::vector<TimelineSample>& timeline,
                      double window_s) {
  double total = 0;
  for (size_t i = 0; i < timeline.size(); ++i) {
    const double from = std::max(0.0, timeline[i].t_s);
    const double to = std::min(
        window_s, i + 1 < timeline.size() ? timeline[i + 1].t_s : window_s);
    if (to > from) {
      total += timeline[i].replicas * (to - from);
    }
  }
  return total;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const auto rank =
      static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())) - 1);
  return v[std::min(rank, v.size() - 1)];
}

ReplaySummary SummariseLive(const std::vector<RequestRecord>& requests,
                            const std::vector<TimelineSample>& timeline,
                            int64_t scale_events, double window_s,
                            double ttft_slo_s, double price_per_hour) {
  ReplaySummary s;
  std::vector<double> ttft;
  double within = 0;
  for (const RequestRecord& r : requests) {
    ++s.requests;
    s.cold_start_requests += r.cold ? 1 : 0;
    const bool ok = r.status == 200 && r.body_ok && r.first_byte_s >= 0;
    s.answered += ok ? 1 : 0;
    if (ok) {
      const double t = r.first_byte_s - r.due_s;
      ttft.push_back(t);
      within += t <= ttft_slo_s ? 1 : 0;
    }
  }
  s.scale_events = static_cast<double>(scale_events);
  s.replica_seconds = ReplicaSeconds(timeline, window_s);
  s.ttft_p50_s = Quantile(ttft, 0.5);
  s.ttft_p99_s = Quantile(ttft, 0.99);
  s.ttft_attainment = s.requests > 0 ? within / s.requests : 0;
  s.cost_usd = s.replica_seconds * price_per_hour / 3600;
  return s;
}

void ColdStartTracker::Observe(double t_s, const std::string& pod, bool ready) {
  if (done_.contains(pod)) {
    return;
  }
  auto it = first_seen_.find(pod);
  if (it == first_seen_.end()) {
    if (ready) {
      done_.insert(pod);  // its start was not seen
    } else {
      first_seen_.emplace(pod, t_s);
    }
    return;
  }
  if (ready) {
    cold_starts_.push_back(t_s - it->second);
    first_seen_.erase(it);
    done_.insert(pod);
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

SimSpread Spread(const std::vector<ReplaySummary>& runs) {
  SimSpread out;
  if (runs.empty()) {
    return out;
  }
  // Each figure on its own: the median run of one figure need not be the
  // median run of another.
  for (const SummaryField& f : SummaryFields()) {
    std::vector<double> v;
    v.reserve(runs.size());
    for (const ReplaySummary& r : runs) {
      v.push_back(r.*f.field);
    }
    out.median.*f.field = Median(v);
    out.min.*f.field = *std::min_element(v.begin(), v.end());
    out.max.*f.field = *std::max_element(v.begin(), v.end());
  }
  return out;
}

double RelativeDifference(double live, double sim) {
  if (sim == 0) {
    return live == 0 ? 0 : (live > 0 ? 1 : -1);
  }
  return (live - sim) / std::abs(sim);
}

double ComparedRow::BeyondSpread() const {
  if (InSpread()) {
    return 0;
  }
  return RelativeDifference(live, live < sim_min ? sim_min : sim_max);
}

std::vector<ComparedRow> Compare(const ReplaySummary& live,
                                 const SimSpread& sim) {
  std::vector<ComparedRow> rows;
  for (const SummaryField& f : SummaryFields()) {
    if (!f.compared) {
      continue;
    }
    ComparedRow r;
    r.name = f.name;
    r.live = live.*f.field;
    r.sim = sim.median.*f.field;
    r.sim_min = sim.min.*f.field;
    r.sim_max = sim.max.*f.field;
    r.diff = RelativeDifference(r.live, r.sim);
    rows.push_back(r);
  }
  return rows;
}

std::optional<double> TickPhase(const std::vector<double>& decision_times_s,
                                double tick_s) {
  constexpr double kWithin = 0.05;
  if (decision_times_s.size() < 10 || !(tick_s > 0)) {
    return std::nullopt;
  }
  std::vector<double> phase;
  phase.reserve(decision_times_s.size());
  for (double t : decision_times_s) {
    phase.push_back(std::fmod(std::fmod(t, tick_s) + tick_s, tick_s));
  }
  // The phase with the most others within 50 ms of it (around the circle).
  const auto near = [&](double a, double b) {
    const double d = std::abs(a - b);
    return std::min(d, tick_s - d) <= kWithin;
  };
  size_t best = 0;
  size_t best_count = 0;
  for (size_t i = 0; i < phase.size(); ++i) {
    const auto n = static_cast<size_t>(
        std::count_if(phase.begin(), phase.end(),
                      [&](double p) { return near(p, phase[i]); }));
    if (n > best_count) {
      best = i;
      best_count = n;
    }
  }
  if (2 * best_count < phase.size()) {
    return std::nullopt;
  }
  // Their median, unwrapped around the chosen one.
  std::vector<double> close;
  for (double p : phase) {
    if (near(p, phase[best])) {
      double d = p - phase[best];
      d -= tick_s * std::round(d / tick_s);
      close.push_back(phase[best] + d);
    }
  }
  const double m = Median(close);
  return std::fmod(m + tick_s, tick_s);
}

std::optional<double> ReportLag(const std::vector<RequestRecord>& records,
                                const std::vector<DemandSample>& samples,
                                double max_lag_s) {
  if (samples.size() < 20) {
    return std::nullopt;
  }
  std::vector<double> starts;
  std::vector<double> ends;
  for (const RequestRecord& r : records) {
    if (r.done_s >= r.sent_s) {
      starts.push_back(r.sent_s);
      ends.push_back(r.done_s);
    }
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  // Requests sent at or before t and not done by t.
  const auto concurrency = [&](double t) {
    const auto sent = std::upper_bound(starts.begin(), starts.end(), t);
    const auto done = std::upper_bound(ends.begin(), ends.end(), t);
    return static_cast<double>(sent - starts.begin()) -
           static_cast<double>(done - ends.begin());
  };
  std::optional<double> best;
  double best_error = 0;
  for (int step = 0; 0.05 * step < max_lag_s - 1e-9; ++step) {
    const double lag = 0.05 * step;
    double error = 0;
    for (const DemandSample& s : samples) {
      error += std::abs(s.concurrency - concurrency(s.t_s - lag));
    }
    if (!best || error < best_error - 1e-9) {
      best = lag;
      best_error = error;
    }
  }
  return best;
}

std::string RequestsCsv(const std::vector<RequestRecord>& records) {
  std::string out =
      "due_s,sent_s,first_byte_s,done_s,status,body_ok,cold,held_s,"
      "prompt_tokens,output_tokens\n";
  for (const RequestRecord& r : records) {
    absl::StrAppendFormat(&out, "%.3f,%.3f,%.3f,%.3f,%d,%d,%d,%.3f,%u,%u\n",
                          r.due_s, r.sent_s, r.first_byte_s, r.done_s, r.status,
                          r.body_ok ? 1 : 0, r.cold ? 1 : 0, r.held_s,
                          r.prompt_tokens, r.output_tokens);
  }
  return out;
}

namespace {

// The data rows of a CSV with a header, split on commas.
std::vector<std::vector<std::string>> Rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (header) {
      header = false;
      continue;
    }
    if (!line.empty()) {
      rows.push_back(absl::StrSplit(line, ','));
    }
  }
  return rows;
}

absl::Status BadRow(size_t i, const std::vector<std::string>& f) {
  return absl::InvalidArgumentError(
      absl::StrCat("line ", i + 2, ": not a record: ", absl::StrJoin(f, ",")));
}

}  // namespace

absl::StatusOr<std::vector<RequestRecord>> ParseRequestsCsv(
    const std::string& text) {
  std::vector<RequestRecord> out;
  const std::vector<std::vector<std::string>> rows = Rows(text);
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<std::string>& f = rows[i];
    RequestRecord r;
    int body_ok = 0;
    int cold = 0;
    if (f.size() != 10 || !absl::SimpleAtod(f[0], &r.due_s) ||
        !absl::SimpleAtod(f[1], &r.sent_s) ||
        !absl::SimpleAtod(f[2], &r.first_byte_s) ||
        !absl::SimpleAtod(f[3], &r.done_s) ||
        !absl::SimpleAtoi(f[4], &r.status) ||
        !absl::SimpleAtoi(f[5], &body_ok) || !absl::SimpleAtoi(f[6], &cold) ||
        !absl::SimpleAtod(f[7], &r.held_s) ||
        !absl::SimpleAtoi(f[8], &r.prompt_tokens) ||
        !absl::SimpleAtoi(f[9], &r.output_tokens)) {
      return BadRow(i, f);
    }
    r.body_ok = body_ok != 0;
    r.cold = cold != 0;
    out.push_back(r);
  }
  return out;
}

std::string TimelineCsv(const std::vector<TimelineSample>& timeline) {
  std::string out = "t_s,replicas,ready\n";
  for (const TimelineSample& t : timeline) {
    absl::StrAppendFormat(&out, "%.3f,%d,%d\n", t.t_s, t.replicas, t.ready);
  }
  return out;
}

absl::StatusOr<std::vector<TimelineSample>> ParseTimelineCsv(
    const std::string& text) {
  std::vector<TimelineSample> out;
  const std::vector<std::vector<std::string>> rows = Rows(text);
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<std::string>& f = rows[i];
    TimelineSample t;
    if (f.size() != 3 || !absl::SimpleAtod(f[0], &t.t_s) ||
        !absl::SimpleAtoi(f[1], &t.replicas) ||
        !absl::SimpleAtoi(f[2], &t.ready)) {
      return BadRow(i, f);
    }
    out.push_back(t);
  }
  return out;
}

void PrintComparison(const std::vector<ComparedRow>& rows, std::ostream& out) {
  out << absl::StrFormat("%-22s %10s %10s %21s %9s\n", "", "live", "sim median",
                         "sim range", "live/sim");
  for (const ComparedRow& r : rows) {
    out << absl::StrFormat("%-22s %10.4g %10.4g %10.4g-%-10.4g %+8.1f%%%s\n",
                           r.name, r.live, r.sim, r.sim_min, r.sim_max,
                           100 * r.diff, r.InSpread() ? "" : " outside");
  }
}

namespace {

// An SVG polyline of a step function (value held until the next sample).
std::string Steps(const std::vector<TimelineSample>& t, bool ready,
                  double window_s, double max_y, const char* colour,
                  const char* dash) {
  constexpr double kW = 900;
  constexpr double kH = 260;
  std::string points;
  double last_y = kH;
  for (const TimelineSample& s : t) {
    if (s.t_s < 0 || s.t_s > window_s) {
      continue;
    }
    const double x = kW * s.t_s / window_s;
    const double y = kH - kH * (ready ? s.ready : s.replicas) / max_y;
    absl::StrAppendFormat(&points, "%.1f,%.1f %.1f,%.1f ", x, last_y, x, y);
    last_y = y;
  }
  absl::StrAppendFormat(&points, "%.1f,%.1f", kW, last_y);
  return absl::StrFormat(
      "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
      "stroke-dasharray=\"%s\" points=\"%s\"/>",
      colour, dash, points);
}

}  // namespace

std::string ComparisonHtml(const std::string& title,
                           const std::vector<TimelineSample>& live,
                           const std::vector<TimelineSample>& sim,
                           const std::vector<ComparedRow>& rows,
                           double window_s) {
  int max_y = 1;
  for (const auto* t : {&live, &sim}) {
    for (const TimelineSample& s : *t) {
      max_y = std::max(max_y, s.replicas);
    }
  }
  const double top = max_y + 1;
  std::string html = absl::StrCat(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>", title,
      "</title><style>body{font-family:sans-serif;margin:2em}"
      "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:"
      "right}td:first-child{text-align:left}</style></head><body><h1>",
      title, "</h1>");
  absl::StrAppendFormat(
      &html,
      "<p>Replicas (requested and not gone) over the %.0f s slice: "
      "<span style=\"color:#d62728\">live</span> and "
      "<span style=\"color:#1f77b4\">simulated</span> (the run with the "
      "median replica-seconds); dashed: Ready. "
      "Axis: 0 to %d replicas.</p>"
      "<svg width=\"920\" height=\"280\" viewBox=\"-10 -10 920 280\">"
      "<rect x=\"0\" y=\"0\" width=\"900\" height=\"260\" fill=\"none\" "
      "stroke=\"#ccc\"/>",
      window_s, static_cast<int>(top));
  html += Steps(live, false, window_s, top, "#d62728", "none");
  html += Steps(sim, false, window_s, top, "#1f77b4", "none");
  html += Steps(live, true, window_s, top, "#d62728", "4 3");
  html += Steps(sim, true, window_s, top, "#1f77b4", "4 3");
  html +=
      "</svg><table><tr><th></th><th>live</th><th>simulated (median)"
      "</th><th>simulated (range)</th><th>live/sim</th></tr>";
  for (const ComparedRow& r : rows) {
    absl::StrAppendFormat(&html,
                          "<tr><td>%s</td><td>%.4g</td><td>%.4g</td><td>%.4g"
                          " &ndash; %.4g</td><td>%+.1f%%</td></tr>",
                          r.name, r.live, r.sim, r.sim_min, r.sim_max,
                          100 * r.diff);
  }
  html += "</table></body></html>\n";
  return html;
}

}  // namespace pilotlight::tools
