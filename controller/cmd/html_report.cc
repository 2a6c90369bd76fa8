#include "controller/cmd/html_report.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace pilotlight::cmd {
namespace {

std::string Escape(absl::string_view s) {
  return absl::StrReplaceAll(
      s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

constexpr double kW = 900;
constexpr double kH = 160;

// One polyline of `value(point)` scaled to [0, max] over the chart.
std::string Line(const std::vector<sim::TimelinePoint>& tl, double t_max,
                 double v_max,
                 const std::function<double(const sim::TimelinePoint&)>& value,
                 absl::string_view color, bool step) {
  std::string pts;
  double prev_y = kH;
  for (const sim::TimelinePoint& p : tl) {
    const double x = t_max > 0 ? p.t_s / t_max * kW : 0;
    const double y = kH - (v_max > 0 ? value(p) / v_max * kH : 0);
    if (step && !pts.empty()) {
      absl::StrAppendFormat(&pts, "%.1f,%.1f ", x, prev_y);
    }
    absl::StrAppendFormat(&pts, "%.1f,%.1f ", x, y);
    prev_y = y;
  }
  return absl::StrFormat(
      "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.3\" "
      "points=\"%s\"/>",
      color, pts);
}

std::string Chart(absl::string_view title, absl::string_view legend,
                  double v_max, absl::string_view unit,
                  const std::string& lines) {
  return absl::StrFormat(
      "<figure><figcaption>%s <small>%s</small></figcaption>"
      "<svg viewBox=\"-95 -10 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
      "role=\"img\"><rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
      "fill=\"#fafafa\" stroke=\"#ccc\"/>"
      "<text x=\"-6\" y=\"8\" text-anchor=\"end\" font-size=\"10\">%.4g "
      "%s</text>"
      "<text x=\"-6\" y=\"%.0f\" text-anchor=\"end\" font-size=\"10\">0</text>"
      "%s</svg></figure>",
      Escape(title), legend, kW + 105, kH + 30, kW + 105, kH + 30, kW, kH,
      v_max, Escape(unit), kH, lines);
}

}  // namespace

std::string HtmlReport(const sim::Trace& trace, const sim::SimConfig& config,
                       const sim::RunReport& report) {
  std::string h = absl::StrCat(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>Pilotlight simulation: ",
      Escape(trace.path),
      "</title><style>body{font:14px system-ui,sans-serif;margin:2em;"
      "color:#222}table{border-collapse:collapse}td,th{padding:4px 10px;"
      "border-bottom:1px solid #ddd;text-align:right}th:first-child,"
      "td:first-child{text-align:left}figure{margin:1em 0}figcaption{"
      "font-weight:600}small{font-weight:400;color:#666}</style></head><body>");
  absl::StrAppendFormat(
      &h,
      "<h1>Pilotlight simulation</h1><p>Trace <code>%s</code> (%s): %d "
      "requests, %d endpoint(s), %.1f h. Model %s on %s x%d; SLO TTFT %.1f s, "
      "TPOT %.0f ms, cold-start budget %.1f %%; billing per %s.</p>",
      Escape(trace.path), sim::TraceFormatName(trace.format), report.requests,
      report.endpoints, report.duration_s / 3600,
      Escape(config.spec.model.name), Escape(config.spec.variants[0].gpu_class),
      config.spec.variants[0].gpus_per_replica,
      absl::ToDoubleSeconds(config.spec.slo.ttft),
      absl::ToDoubleMilliseconds(config.spec.slo.tpot),
      100 * config.spec.slo.max_cold_start_fraction,
      absl::FormatDuration(config.billing_granularity));
  h += "<table id=\"summary\"><tr><th>policy</th><th>cost $</th><th>GPU-h</th>"
       "<th>cold-start requests</th><th>cold %</th><th>TTFT p50 s</th>"
       "<th>TTFT p99 s</th><th>SLO %</th><th>scale events</th></tr>";
  double max_replicas = 1;
  double max_demand = 0;
  double max_cost = 0;
  double max_cold = 1;
  double t_max = 0;
  for (const sim::PolicyResult& p : report.policies) {
    const sim::SimResult& s = p.result;
    const double n = std::max<double>(1, static_cast<double>(s.requests));
    absl::StrAppendFormat(
        &h,
        "<tr><td>%s</td><td>%.2f</td><td>%.1f</td><td>%d</td><td>%.2f</td>"
        "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%d</td></tr>",
        Escape(p.name), s.cost_usd, s.gpu_seconds / 3600, s.cold_start_requests,
        100.0 * static_cast<double>(s.cold_start_requests) / n,
        s.ttft.Quantile(0.5), s.ttft.Quantile(0.99),
        100.0 * static_cast<double>(s.within_ttft_slo) / n, s.scale_events);
    for (const sim::TimelinePoint& t : s.timeline) {
      max_replicas = std::max(max_replicas, static_cast<double>(t.replicas));
      max_demand = std::max(max_demand, t.demand);
      max_cost = std::max(max_cost, t.cost_usd);
      max_cold = std::max(max_cold, static_cast<double>(t.cold_starts));
      t_max = std::max(t_max, t.t_s);
    }
  }
  h += "</table>";
  for (const sim::PolicyResult& p : report.policies) {
    const auto& tl = p.result.timeline;
    absl::StrAppendFormat(&h, "<h2>%s</h2>", Escape(p.name));
    h += Chart("replicas and demand",
               "(blue: replicas asked for, green: ready, grey: "
               "requests in flight + queued on its own scale)",
               max_replicas, "replicas",
               Line(
                   tl, t_max, max_demand,
                   [](const sim::TimelinePoint& x) { return x.demand; }, "#999",
                   false) +
                   Line(
                       tl, t_max, max_replicas,
                       [](const sim::TimelinePoint& x) {
                         return static_cast<double>(x.replicas);
                       },
                       "#1f6feb", true) +
                   Line(
                       tl, t_max, max_replicas,
                       [](const sim::TimelinePoint& x) {
                         return static_cast<double>(x.ready);
                       },
                       "#2da44e", true));
    h += Chart("cold-start requests (cumulative)", "", max_cold, "requests",
               Line(
                   tl, t_max, max_cold,
                   [](const sim::TimelinePoint& x) {
                     return static_cast<double>(x.cold_starts);
                   },
                   "#cf222e", true));
    h += Chart("cost (cumulative)", "", max_cost, "USD",
               Line(
                   tl, t_max, max_cost,
                   [](const sim::TimelinePoint& x) { return x.cost_usd; },
                   "#8250df", false));
  }
  absl::StrAppendFormat(&h,
                        "<p><small>Time axis: 0 to %.1f h. Generated by "
                        "pilotlight simulate.</small></p></body></html>\n",
                        t_max / 3600);
  return h;
}

}  // namespace pilotlight::cmd
