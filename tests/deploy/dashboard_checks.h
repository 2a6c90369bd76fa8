// Checks of a Grafana dashboard (Classic JSON) without Grafana, after the
// rules of grafana/dashboard-linter: a templated Prometheus datasource
// used by every panel and target, valid unit ids, titles and descriptions,
// panels inside the 24-column grid, range selectors on $__rate_interval,
// counters and histogram buckets only inside rate()/increase()/irate().
// And, for the live check against a real Prometheus, every target's
// PromQL with its variables expanded (Queries, Expand).
#pragma once

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"
#include "tests/files.h"

namespace pilotlight::testutil {

inline constexpr char kDashboard[] =
    "charts/pilotlight/dashboards/pilotlight-endpoint.json";

// The chart's dashboard (the tests run from the repository root).
inline nlohmann::json LoadDashboard() {
  return nlohmann::json::parse(ReadFile(kDashboard));
}

struct DashboardQuery {
  std::string panel;  // its title
  std::string ref;    // the target's refId
  std::string expr;
};

inline std::vector<DashboardQuery> Queries(const nlohmann::json& dash) {
  std::vector<DashboardQuery> out;
  for (const nlohmann::json& p : dash.at("panels")) {
    for (const nlohmann::json& t :
         p.value("targets", nlohmann::json::array())) {
      out.push_back(
          {p.value("title", ""), t.value("refId", ""), t.value("expr", "")});
    }
  }
  return out;
}

// The variables a query is run with (Grafana's $__rate_interval is at
// least four scrape intervals: 1m here).
inline std::string Expand(const std::string& expr, const std::string& ns,
                          const std::string& endpoint,
                          const std::string& rate_interval = "1m") {
  return absl::StrReplaceAll(expr, {{"$__rate_interval", rate_interval},
                                    {"$namespace", ns},
                                    {"$endpoint", endpoint}});
}

// Metric names in a PromQL expression: with strings, label matchers,
// ranges and by()/without() clauses taken out, the identifiers with an
// underscore that are not followed by "(" (functions).
inline std::set<std::string> MetricNames(std::string expr) {
  static const std::regex strings(R"("[^"]*")");
  static const std::regex matchers(R"(\{[^}]*\})");
  static const std::regex ranges(R"(\[[^\]]*\])");
  static const std::regex grouping(R"(\b(by|without)\s*\([^)]*\))");
  static const std::regex name(
      R"(\b([a-zA-Z_:][a-zA-Z0-9_:]*_[a-zA-Z0-9_:]*)\b(?!\s*\())");
  for (const std::regex* r : {&strings, &matchers, &ranges, &grouping}) {
    expr = std::regex_replace(expr, *r, " ");
  }
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// Problems found, one line each; empty when the dashboard passes.
inline std::vector<std::string> LintDashboard(const nlohmann::json& dash) {
  static const std::set<std::string> kUnits = {
      "short",       "none",     "s",    "ms",          "us",
      "ns",          "m",        "h",    "d",           "percent",
      "percentunit", "reqps",    "rps",  "ops",         "wps",
      "bytes",       "decbytes", "bits", "currencyUSD", "currencyEUR",
      "dtdurations", "dtdhms"};
  std::vector<std::string> bad;
  auto problem = [&](const std::string& where, const std::string& what) {
    bad.push_back(absl::StrCat(where, ": ", what));
  };
  if (dash.value("uid", "").empty()) {
    problem("dashboard", "no stable uid");
  }
  if (!dash.contains("id") || !dash.at("id").is_null()) {
    problem("dashboard", "id must be null (Grafana assigns it)");
  }
  bool has_ds_var = false;
  for (const nlohmann::json& v : dash.at("templating").at("list")) {
    if (v.value("type", "") == "datasource" &&
        v.value("query", "") == "prometheus" &&
        v.value("name", "") == "datasource") {
      has_ds_var = true;
    }
  }
  if (!has_ds_var) {
    problem("templating", "no `datasource` variable of type prometheus");
  }
  std::set<int> ids;
  for (const nlohmann::json& p : dash.at("panels")) {
    const std::string title = p.value("title", "");
    const std::string where = absl::StrCat("panel \"", title, "\"");
    if (!ids.insert(p.value("id", -1)).second) {
      problem(where, "duplicate id");
    }
    const nlohmann::json g = p.value("gridPos", nlohmann::json::object());
    if (g.value("x", -1) < 0 || g.value("w", 0) <= 0 ||
        g.value("x", 0) + g.value("w", 0) > 24) {
      problem(where, "outside the 24-column grid");
    }
    if (p.value("type", "") == "row") {
      continue;
    }
    if (title.empty() || p.value("description", "").empty()) {
      problem(where, "no title or description");
    }
    if (p.value("datasource", nlohmann::json::object()).value("uid", "") !=
        "${datasource}") {
      problem(where, "does not use the ${datasource} variable");
    }
    const std::string unit = p.value("fieldConfig", nlohmann::json::object())
                                 .value("defaults", nlohmann::json::object())
                                 .value("unit", "");
    if (kUnits.count(unit) == 0) {
      problem(where,
              absl::StrCat("unit \"", unit, "\" is not a Grafana unit id"));
    }
    const nlohmann::json targets = p.value("targets", nlohmann::json::array());
    if (targets.empty()) {
      problem(where, "no targets");
    }
    for (const nlohmann::json& t : targets) {
      const std::string expr = t.value("expr", "");
      const std::string at =
          absl::StrCat(where, " target ", t.value("refId", "?"));
      if (t.value("datasource", nlohmann::json::object()).value("uid", "") !=
          "${datasource}") {
        problem(at, "does not use the ${datasource} variable");
      }
      static const std::regex range(R"(\[([^\]]*)\])");
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), range);
           it != std::sregex_iterator(); ++it) {
        if ((*it)[1].str() != "$__rate_interval") {
          problem(at, absl::StrCat("range [", (*it)[1].str(),
                                   "] instead of $__rate_interval"));
        }
      }
      for (const std::string& m : MetricNames(expr)) {
        const bool counter =
            m.size() > 6 && (m.ends_with("_total") || m.ends_with("_bucket"));
        if (!counter) {
          continue;
        }
        const std::regex wrapped(
            absl::StrCat(R"(\b(rate|increase|irate)\(\s*)", m, R"(\b)"));
        const std::regex any(absl::StrCat(R"(\b)", m, R"(\b)"));
        const auto all =
            std::distance(std::sregex_iterator(expr.begin(), expr.end(), any),
                          std::sregex_iterator());
        const auto ok = std::distance(
            std::sregex_iterator(expr.begin(), expr.end(), wrapped),
            std::sregex_iterator());
        if (all != ok) {
          problem(at, absl::StrCat("counter ", m,
                                   " outside rate()/increase()/irate()"));
        }
      }
    }
  }
  return bad;
}

}  // namespace pilotlight::testutil
