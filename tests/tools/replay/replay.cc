#include "tests/tools/replay/replay.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pilotlight::tools {

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
  int64_t within = 0;
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
  s.scale_events = scale_events;
  s.replica_seconds = ReplicaSeconds(timeline, window_s);
  s.ttft_p50_s = Quantile(ttft, 0.5);
  s.ttft_p99_s = Quantile(ttft, 0.99);
  s.ttft_attainment = s.requests > 0 ? static_cast<double>(within) /
                                           static_cast<double>(s.requests)
                                     : 0;
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
  const auto each = [&](auto field) {
    std::vector<double> v;
    v.reserve(runs.size());
    for (const ReplaySummary& r : runs) {
      v.push_back(static_cast<double>(r.*field));
    }
    using T = std::remove_reference_t<decltype(runs[0].*field)>;
    out.median.*field = static_cast<T>(Median(v));
    out.min.*field = static_cast<T>(*std::min_element(v.begin(), v.end()));
    out.max.*field = static_cast<T>(*std::max_element(v.begin(), v.end()));
  };
  each(&ReplaySummary::requests);
  each(&ReplaySummary::answered);
  each(&ReplaySummary::cold_start_requests);
  each(&ReplaySummary::scale_events);
  each(&ReplaySummary::replica_seconds);
  each(&ReplaySummary::ttft_p50_s);
  each(&ReplaySummary::ttft_p99_s);
  each(&ReplaySummary::ttft_attainment);
  each(&ReplaySummary::cost_usd);
  return out;
}

double RelativeDifference(double live, double sim) {
  if (sim == 0) {
    return live == 0 ? 0 : (live > 0 ? 1 : -1);
  }
  return (live - sim) / std::abs(sim);
}

std::vector<ComparedRow> Compare(const ReplaySummary& live,
                                 const SimSpread& sim) {
  std::vector<ComparedRow> rows;
  const auto row = [&](const char* name, auto field) {
    ComparedRow r;
    r.name = name;
    r.live = static_cast<double>(live.*field);
    r.sim = static_cast<double>(sim.median.*field);
    r.sim_min = static_cast<double>(sim.min.*field);
    r.sim_max = static_cast<double>(sim.max.*field);
    r.diff = RelativeDifference(r.live, r.sim);
    rows.push_back(r);
  };
  row("requests", &ReplaySummary::requests);
  row("replica-seconds", &ReplaySummary::replica_seconds);
  row("cold-start requests", &ReplaySummary::cold_start_requests);
  row("scale events", &ReplaySummary::scale_events);
  row("TTFT p50 (s)", &ReplaySummary::ttft_p50_s);
  row("TTFT p99 (s)", &ReplaySummary::ttft_p99_s);
  row("TTFT SLO attainment", &ReplaySummary::ttft_attainment);
  row("cost (USD)", &ReplaySummary::cost_usd);
  return rows;
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
