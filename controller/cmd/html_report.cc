#include "controller/cmd/html_report.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "controller/sim/verdict.h"

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

// Cost against SLO attainment: one polyline per policy through its sweep
// (in knob order), its matched setting ringed, the target a dashed line.
std::string MatchChart(const sim::MatchReport& m) {
  static constexpr const char* kColors[] = {"#1f6feb", "#cf222e", "#8250df",
                                            "#2da44e", "#bf8700", "#6e7781",
                                            "#000000"};
  double lo = m.effective;
  double max_cost = 0;
  for (const sim::MatchedPolicy& p : m.policies) {
    for (const sim::SweepPoint& s : p.sweep) {
      lo = std::min(lo, s.slo_attainment);
      max_cost = std::max(max_cost, s.cost_usd);
    }
  }
  lo = std::max(0.0, std::floor(lo * 20) / 20);  // to 5 % below
  const double span = std::max(1e-9, 1 - lo);
  const auto x = [&](double a) { return (a - lo) / span * kW; };
  const auto y = [&](double c) {
    return kH - (max_cost > 0 ? c / max_cost * kH : 0);
  };
  std::string lines;
  std::string legend;
  size_t i = 0;
  for (const sim::MatchedPolicy& p : m.policies) {
    const char* color = kColors[i++ % std::size(kColors)];
    std::string pts;
    for (const sim::SweepPoint& s : p.sweep) {
      absl::StrAppendFormat(&pts, "%.1f,%.1f ", x(s.slo_attainment),
                            y(s.cost_usd));
      absl::StrAppendFormat(&lines,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
                            "fill=\"%s\"/>",
                            x(s.slo_attainment), y(s.cost_usd), color);
    }
    absl::StrAppendFormat(&lines,
                          "<polyline fill=\"none\" stroke=\"%s\" "
                          "stroke-width=\"1.3\" points=\"%s\"/>",
                          color, pts);
    if (p.chosen) {
      const sim::SweepPoint& c = p.sweep[*p.chosen];
      absl::StrAppendFormat(&lines,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" "
                            "fill=\"none\" stroke=\"%s\"/>",
                            x(c.slo_attainment), y(c.cost_usd), color);
    }
    absl::StrAppendFormat(&legend,
                          "<span style=\"color:%s\">&#9679; %s</span> ", color,
                          Escape(p.name));
  }
  absl::StrAppendFormat(
      &lines,
      "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%.0f\" "
      "stroke=\"#999\" stroke-dasharray=\"4 3\"/>"
      "<text x=\"0\" y=\"%.0f\" font-size=\"10\">%.0f%%</text>"
      "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" "
      "text-anchor=\"end\">100%% within SLO</text>",
      x(m.effective), x(m.effective), kH, kH + 14, 100 * lo, kW, kH + 14);
  return Chart("cost against SLO attainment",
               absl::StrCat("(one line per policy through its knob's settings; "
                            "ringed: the cheapest that reaches the target; "
                            "dashed: the target. ",
                            legend, ")"),
               max_cost, "USD", lines);
}

// The matched-SLO table.
std::string MatchTable(const sim::MatchReport& m) {
  std::string h = absl::StrFormat(
      "<h2>At matched SLO</h2><p>Each policy's cheapest setting with at least "
      "%.1f %% of requests within SLO (TTFT and TPOT) and at most %.1f %% "
      "cold-start requests.</p><table id=\"matched\"><tr><th>policy</th>"
      "<th>setting</th><th>cost $</th><th>SLO %%</th><th>cold %%</th>"
      "<th>TTFT p99 s</th></tr>",
      100 * m.effective, 100 * m.max_cold_start_fraction);
  for (const sim::MatchedPolicy& p : m.policies) {
    if (!p.chosen) {
      absl::StrAppendFormat(
          &h, "<tr><td>%s</td><td colspan=\"5\">not reached</td></tr>",
          Escape(p.name));
      continue;
    }
    const sim::SweepPoint& c = p.sweep[*p.chosen];
    const std::string setting = sim::SettingLabel(p, c);
    absl::StrAppendFormat(&h,
                          "<tr><td>%s</td><td>%s</td><td>%.2f</td><td>%.2f</td>"
                          "<td>%.2f</td><td>%.2f</td></tr>",
                          Escape(p.name), Escape(setting), c.cost_usd,
                          100 * c.slo_attainment, 100 * c.cold_start_fraction,
                          c.ttft_p99_s);
  }
  return h + "</table>" + MatchChart(m);
}

// Whether a simple policy beat pilotlight at its defaults (sim/verdict.h).
std::string VerdictSection(const sim::Verdict& v) {
  std::string h = absl::StrFormat(
      "<h2>Beaten by a simple policy?</h2><p id=\"verdict\"><b>%s</b>: "
      "pilotlight at its defaults %s.</p>",
      v.beaten ? "Yes" : "No", Escape(v.why));
  if (!v.dominated_by.empty()) {
    h += "<p>Runs that dominate it (as cheap, as much within SLO, as few "
         "cold starts, better on one):</p><ul>";
    for (const sim::PolicyRun& r : v.dominated_by) {
      absl::StrAppendFormat(
          &h, "<li>%s (%s): $%.2f, %.2f %% within SLO, %.2f %% cold</li>",
          Escape(r.policy), Escape(r.setting), r.point.cost_usd,
          100 * r.point.slo_attainment, 100 * r.point.cold_start_fraction);
    }
    h += "</ul>";
  }
  if (v.frontier.empty()) {
    return h;
  }
  absl::StrAppendFormat(
      &h,
      "<p>Each swept baseline's cost where pilotlight stands ($%.2f; linear "
      "between sweep points; &ldquo;never&rdquo;: no setting gets there).</p>"
      "<table id=\"frontier\"><tr><th>policy</th><th>at %.2f %% within "
      "SLO</th><th>at %.2f %% cold</th></tr>",
      v.pilotlight.cost_usd, 100 * v.pilotlight.slo_attainment,
      100 * v.pilotlight.cold_start_fraction);
  const auto cost = [](const std::optional<double>& c) {
    return c ? absl::StrFormat("$%.2f", *c) : std::string("never");
  };
  for (const sim::FrontierCost& f : v.frontier) {
    absl::StrAppendFormat(&h, "<tr><td>%s</td><td>%s</td><td>%s</td></tr>",
                          Escape(f.policy), cost(f.at_attainment),
                          cost(f.at_cold_share));
  }
  return h + "</table>";
}

// The charts' scales: the largest of each series over every policy.
struct Scales {
  double replicas = 1;
  double demand = 0;
  double cost = 0;
  double cold = 1;
  double t = 0;
};

// The head, the setting, and one summary row a policy; the scales of the
// charts.
std::string Summary(const sim::Trace& trace, const sim::SimConfig& config,
                    const sim::RunReport& report, Scales& scales) {
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
       "<th>TTFT p99 s</th><th>SLO %</th><th>refused (hold full)</th>"
       "<th>gave up waiting</th><th>activation timeout (503)</th>"
       "<th>tries made again</th>"
       "<th>scale events</th></tr>";
  for (const sim::PolicyResult& p : report.policies) {
    const sim::SimResult& s = p.result;
    const double n = std::max<double>(1, static_cast<double>(s.requests));
    absl::StrAppendFormat(
        &h,
        "<tr><td>%s</td><td>%.2f</td><td>%.1f</td><td>%d</td><td>%.2f</td>"
        "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%d</td><td>%d</td>"
        "<td>%d</td><td>%d</td><td>%d</td></tr>",
        Escape(p.name), s.cost_usd, s.gpu_seconds / 3600, s.cold_start_requests,
        100.0 * static_cast<double>(s.cold_start_requests) / n,
        s.ttft.Quantile(0.5), s.ttft.Quantile(0.99),
        100.0 * sim::SloAttainment(s), s.rejected_requests,
        s.abandoned_requests, s.activation_timeouts, s.client_retries,
        s.scale_events);
    for (const sim::TimelinePoint& t : s.timeline) {
      scales.replicas =
          std::max(scales.replicas, static_cast<double>(t.replicas));
      scales.demand = std::max(scales.demand, t.demand);
      scales.cost = std::max(scales.cost, t.cost_usd);
      scales.cold = std::max(scales.cold, static_cast<double>(t.cold_starts));
      scales.t = std::max(scales.t, t.t_s);
    }
  }
  return h + "</table>";
}

// A policy's three charts: replicas and demand, cold starts, cost.
std::string PolicyCharts(const sim::PolicyResult& p, const Scales& scales) {
  const auto& tl = p.result.timeline;
  const double t_max = scales.t;
  std::string h = absl::StrFormat("<h2>%s</h2>", Escape(p.name));
  h += Chart(
      "replicas and demand",
      "(blue: replicas asked for, green: ready, grey: "
      "requests in flight + queued on its own scale)",
      scales.replicas, "replicas",
      Line(
          tl, t_max, scales.demand,
          [](const sim::TimelinePoint& x) { return x.demand; }, "#999", false) +
          Line(
              tl, t_max, scales.replicas,
              [](const sim::TimelinePoint& x) {
                return static_cast<double>(x.replicas);
              },
              "#1f6feb", true) +
          Line(
              tl, t_max, scales.replicas,
              [](const sim::TimelinePoint& x) {
                return static_cast<double>(x.ready);
              },
              "#2da44e", true));
  h += Chart("cold-start requests (cumulative)", "", scales.cold, "requests",
             Line(
                 tl, t_max, scales.cold,
                 [](const sim::TimelinePoint& x) {
                   return static_cast<double>(x.cold_starts);
                 },
                 "#cf222e", true));
  h += Chart("cost (cumulative)", "", scales.cost, "USD",
             Line(
                 tl, t_max, scales.cost,
                 [](const sim::TimelinePoint& x) { return x.cost_usd; },
                 "#8250df", false));
  return h;
}

}  // namespace

std::string HtmlReport(const sim::Trace& trace, const sim::SimConfig& config,
                       const sim::RunReport& report,
                       const sim::MatchReport* match) {
  Scales scales;
  std::string h = Summary(trace, config, report, scales);
  if (match != nullptr) {
    h += MatchTable(*match);
  }
  if (const std::optional<sim::Verdict> v = sim::Judge(report, match)) {
    h += VerdictSection(*v);
  }
  for (const sim::PolicyResult& p : report.policies) {
    h += PolicyCharts(p, scales);
  }
  absl::StrAppendFormat(&h,
                        "<p><small>Time axis: 0 to %.1f h. Generated by "
                        "pilotlight simulate.</small></p></body></html>\n",
                        scales.t / 3600);
  return h;
}

}  // namespace pilotlight::cmd
