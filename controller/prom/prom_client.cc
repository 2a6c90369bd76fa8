#include "controller/prom/prom_client.h"

#include <httplib.h>

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "controller/base/json_fields.h"
#include "controller/base/utf8.h"
#include "nlohmann/json.hpp"

namespace pilotlight::prom {
namespace {

using json = nlohmann::json;

// The first bytes of an answer, for an error message that may end up in a
// status condition (JSON): cut at 120 bytes, made valid UTF-8.
std::string Head(absl::string_view body) {
  return ValidUtf8(body.substr(0, 120));
}

// Checks the envelope; returns `data`.
absl::StatusOr<json> Envelope(int http_status, absl::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("status")) {
    return absl::DataLossError(absl::StrCat(
        "Prometheus answered HTTP ", http_status,
        " with something that is not its API's JSON: ", Head(body)));
  }
  if (j["status"] != "success") {
    // Read as strings or not at all: a wrongly typed field must not throw.
    const std::string type = StringField(j, {"errorType"});
    const std::string msg =
        absl::StrCat("Prometheus error (HTTP ", http_status, ", ", type,
                     "): ", StringField(j, {"error"}));
    if (type == "bad_data") {
      return absl::InvalidArgumentError(msg);
    }
    if (type == "timeout" || type == "unavailable" || type == "canceled" ||
        http_status == 503) {
      return absl::UnavailableError(msg);
    }
    return absl::InternalError(msg);
  }
  if (http_status < 200 || http_status >= 300) {
    return absl::DataLossError(absl::StrCat(
        "Prometheus answered HTTP ", http_status, " with status success"));
  }
  if (!j.contains("data") || !j["data"].is_object() ||
      !j["data"].contains("result")) {
    return absl::DataLossError(
        absl::StrCat("Prometheus answer has no data.result: ", Head(body)));
  }
  return std::move(j["data"]);
}

// [<unix seconds>, "<value>"]; nullopt for NaN/Inf and malformed pairs.
std::optional<std::pair<absl::Time, double>> Point(const json& p) {
  if (!p.is_array() || p.size() != 2 || !p[0].is_number() ||
      !p[1].is_string()) {
    return std::nullopt;
  }
  double v = 0;
  if (!absl::SimpleAtod(p[1].get<std::string>(), &v) || !std::isfinite(v)) {
    return std::nullopt;
  }
  return std::make_pair(absl::FromUnixMicros(static_cast<int64_t>(
                            std::llround(p[0].get<double>() * 1e6))),
                        v);
}

absl::StatusOr<Labels> MetricLabels(const json& series) {
  Labels labels;
  const auto m = series.find("metric");
  if (m == series.end() || !m->is_object()) {
    return absl::DataLossError("Prometheus series without a metric object");
  }
  for (const auto& [k, v] : m->items()) {
    if (v.is_string()) {
      labels[k] = v.get<std::string>();
    }
  }
  return labels;
}

}  // namespace

absl::StatusOr<std::vector<Sample>> ParseInstantAnswer(int http_status,
                                                       absl::string_view body) {
  absl::StatusOr<json> data = Envelope(http_status, body);
  if (!data.ok()) {
    return data.status();
  }
  const std::string type = data->value("resultType", "");
  const json& result = (*data)["result"];
  std::vector<Sample> out;
  if (type == "scalar") {
    if (auto p = Point(result)) {
      out.push_back({{}, p->first, p->second});
    }
    return out;
  }
  if (type != "vector" || !result.is_array()) {
    return absl::DataLossError(absl::StrCat("Prometheus answered resultType \"",
                                            type, "\", want vector"));
  }
  out.reserve(result.size());
  for (const json& s : result) {
    absl::StatusOr<Labels> labels = MetricLabels(s);
    if (!labels.ok()) {
      return labels.status();
    }
    const auto v = s.find("value");
    if (v == s.end()) {
      continue;  // e.g. a native histogram sample: not ours
    }
    if (auto p = Point(*v)) {
      out.push_back({*std::move(labels), p->first, p->second});
    }
  }
  return out;
}

absl::StatusOr<std::vector<Series>> ParseRangeAnswer(int http_status,
                                                     absl::string_view body) {
  absl::StatusOr<json> data = Envelope(http_status, body);
  if (!data.ok()) {
    return data.status();
  }
  const std::string type = data->value("resultType", "");
  const json& result = (*data)["result"];
  if (type != "matrix" || !result.is_array()) {
    return absl::DataLossError(absl::StrCat("Prometheus answered resultType \"",
                                            type, "\", want matrix"));
  }
  std::vector<Series> out;
  for (const json& s : result) {
    absl::StatusOr<Labels> labels = MetricLabels(s);
    if (!labels.ok()) {
      return labels.status();
    }
    Series series{*std::move(labels), {}};
    const auto values = s.find("values");
    if (values != s.end() && values->is_array()) {
      for (const json& p : *values) {
        if (auto pt = Point(p)) {
          series.points.push_back(*pt);
        }
      }
    }
    out.push_back(std::move(series));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PromClient>> PromClient::Create(
    const std::string& url, absl::Duration timeout) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Prometheus URL \"", url, "\": want http://host:port[/prefix]"));
  }
  const size_t slash = rest.find('/');
  const std::string host_port(rest.substr(0, slash));
  std::string prefix =
      slash == absl::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') {
    prefix.pop_back();
  }
  if (host_port.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Prometheus URL \"", url, "\" has no host"));
  }
  return std::unique_ptr<PromClient>(
      new PromClient(url, std::move(prefix), timeout));
}

PromClient::PromClient(std::string url, std::string prefix,
                       absl::Duration timeout)
    : url_(std::move(url)), prefix_(std::move(prefix)), timeout_(timeout) {
  absl::string_view rest = url_;
  absl::ConsumePrefix(&rest, "http://");
  const std::string scheme_host_port =
      absl::StrCat("http://", rest.substr(0, rest.find('/')));
  http_ = std::make_unique<httplib::Client>(scheme_host_port);
  const int64_t us = absl::ToInt64Microseconds(timeout_);
  http_->set_connection_timeout(us / 1000000, us % 1000000);
  http_->set_read_timeout(us / 1000000, us % 1000000);
  http_->set_keep_alive(true);
}

PromClient::~PromClient() = default;

absl::StatusOr<std::pair<int, std::string>> PromClient::Post(
    const std::string& path, const std::string& form) {
  ++queries_;
  httplib::Result r =
      http_->Post(prefix_ + path, form, "application/x-www-form-urlencoded");
  if (!r) {
    return absl::UnavailableError(
        absl::StrCat("Prometheus ", url_, ": ", httplib::to_string(r.error())));
  }
  return std::make_pair(r->status, r->body);
}

absl::StatusOr<std::vector<Sample>> PromClient::Query(
    absl::string_view promql, std::optional<absl::Time> at) {
  std::string form = absl::StrCat(
      "query=", httplib::detail::encode_query_param(std::string(promql)),
      "&timeout=", absl::ToInt64Milliseconds(timeout_), "ms");
  if (at) {
    absl::StrAppend(&form, "&time=",
                    absl::StrFormat("%.3f", absl::ToDoubleSeconds(
                                                *at - absl::UnixEpoch())));
  }
  absl::StatusOr<std::pair<int, std::string>> r = Post("/api/v1/query", form);
  if (!r.ok()) {
    return r.status();
  }
  return ParseInstantAnswer(r->first, r->second);
}

absl::StatusOr<std::vector<Series>> PromClient::QueryRange(
    absl::string_view promql, absl::Time start, absl::Time end,
    absl::Duration step) {
  const auto secs = [](absl::Time t) {
    return absl::StrFormat("%.3f",
                           absl::ToDoubleSeconds(t - absl::UnixEpoch()));
  };
  const std::string form = absl::StrCat(
      "query=", httplib::detail::encode_query_param(std::string(promql)),
      "&start=", secs(start), "&end=", secs(end),
      "&step=", absl::ToDoubleSeconds(step),
      "&timeout=", absl::ToInt64Milliseconds(timeout_), "ms");
  absl::StatusOr<std::pair<int, std::string>> r =
      Post("/api/v1/query_range", form);
  if (!r.ok()) {
    return r.status();
  }
  return ParseRangeAnswer(r->first, r->second);
}

}  // namespace pilotlight::prom
