#include "controller/sim/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace pilotlight::sim {

absl::string_view TraceFormatName(TraceFormat f) {
  switch (f) {
    case TraceFormat::kAuto:
      return "auto";
    case TraceFormat::kAzure:
      return "azure";
    case TraceFormat::kMooncake:
      return "mooncake";
    case TraceFormat::kAlibaba:
      return "alibaba";
    case TraceFormat::kServeGen:
      return "servegen";
    case TraceFormat::kCsv:
      return "csv";
  }
  return "?";
}

absl::StatusOr<TraceFormat> ParseTraceFormat(absl::string_view name) {
  for (TraceFormat f :
       {TraceFormat::kAuto, TraceFormat::kAzure, TraceFormat::kMooncake,
        TraceFormat::kAlibaba, TraceFormat::kServeGen, TraceFormat::kCsv}) {
    if (absl::EqualsIgnoreCase(name, TraceFormatName(f))) {
      return f;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown trace format '", name,
                   "' (known: auto, azure, mooncake, alibaba, servegen, csv)"));
}

void BadRows::Add(int64_t line, absl::string_view why) {
  ++count;
  if (examples.size() < 5) {
    examples.push_back(absl::StrCat("line ", line, ": ", why));
  }
}

int64_t Trace::stored_requests() const {
  int64_t n = 0;
  for (const EndpointTrace& e : endpoints) {
    n += static_cast<int64_t>(e.requests.size());
  }
  return n;
}

namespace {

// Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
// days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool Digits(absl::string_view s, size_t pos, size_t n, int64_t* out) {
  if (pos + n > s.size()) {
    return false;
  }
  int64_t v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// Splits text into lines (without '\r'), calling f(line_number, line).
template <typename F>
void ForEachLine(absl::string_view text, F f) {
  int64_t n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) {
      end = text.size();
    }
    absl::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    f(++n, line);
    start = end + 1;
  }
}

// Token counts are uint32: larger ones are bad rows, not a cast's UB.
constexpr double kMaxTokens = 4e9;
// A service time longer than this (~11.6 days) is corruption, and one past
// float's range would become infinite: a request that never completes.
constexpr double kMaxServiceSeconds = 1e6;

bool ParseCount(absl::string_view s, uint32_t* out) {
  s = absl::StripAsciiWhitespace(s);
  double v = 0;
  if (!absl::SimpleAtod(s, &v) || !(v >= 0) || v > kMaxTokens) {
    return false;
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

// The end of every per-request reader: checks the rows' times (`times`,
// with their lines) against `checks`, then sorts each endpoint's requests,
// rebases times to the earliest arrival and sets the duration.
absl::StatusOr<Trace> Finish(Trace t, std::vector<RowTime> times,
                             const TraceChecks& checks) {
  if (absl::Status span = CheckSpan(std::move(times), checks); !span.ok()) {
    return span;
  }
  double first = 0;
  double last = 0;
  bool any = false;
  for (EndpointTrace& e : t.endpoints) {
    std::stable_sort(e.requests.begin(), e.requests.end(),
                     [](const Request& a, const Request& b) {
                       return a.arrival_s < b.arrival_s;
                     });
    if (!e.requests.empty()) {
      first = any ? std::min(first, e.requests.front().arrival_s)
                  : e.requests.front().arrival_s;
      last = any ? std::max(last, e.requests.back().arrival_s)
                 : e.requests.back().arrival_s;
      any = true;
    }
  }
  for (EndpointTrace& e : t.endpoints) {
    for (Request& r : e.requests) {
      r.arrival_s -= first;
    }
  }
  t.duration_s = any ? last - first : 0;
  return t;
}

// "3.2 h", "11.3 days", "2.0e+03 years": a span a reader can place.
std::string HumanSpan(double s) {
  constexpr double kDay = 86400;
  if (s >= 2 * 365 * kDay) {
    return absl::StrFormat("%.3g years", s / (365.25 * kDay));
  }
  if (s >= 2 * kDay) {
    return absl::StrFormat("%.1f days", s / kDay);
  }
  if (s >= 2 * 3600) {
    return absl::StrFormat("%.1f h", s / 3600);
  }
  return absl::StrFormat("%.0f s", s);
}

absl::Status NoRows(absl::string_view format, const Trace& t) {
  return absl::InvalidArgumentError(absl::StrCat(
      "no usable ", format, " rows (", t.bad.count, " bad",
      t.bad.examples.empty() ? ""
                             : absl::StrCat("; first: ", t.bad.examples[0]),
      ")"));
}

}  // namespace

absl::Status CheckSpan(std::vector<RowTime> rows, const TraceChecks& checks) {
  if (rows.size() < 2) {
    return absl::OkStatus();
  }
  std::sort(rows.begin(), rows.end(), [](const RowTime& a, const RowTime& b) {
    return a.t < b.t || (a.t == b.t && a.line < b.line);
  });
  const size_t n = rows.size();
  const double span = rows.back().t - rows.front().t;
  constexpr char kFix[] =
      "a corrupted timestamp? Fix or drop the row, or pass --max-span to "
      "replay a span this long on purpose";
  if (checks.reject_isolated) {
    // The widest gap between neighbours in time; the side with few rows is
    // the suspect when the gap dwarfs the span of the many.
    size_t at = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rows[i + 1].t - rows[i].t > rows[at + 1].t - rows[at].t) {
        at = i;
      }
    }
    const size_t left = at + 1;
    const size_t right = n - left;
    const size_t few = std::max<size_t>(3, n / 1000);
    const double gap = rows[at + 1].t - rows[at].t;
    const bool left_few = left < right;
    const size_t isolated = left_few ? left : right;
    const double rest_span =
        left_few ? rows.back().t - rows[left].t : rows[at].t - rows.front().t;
    if (isolated <= few && gap > 86400 && gap > 10 * rest_span) {
      const RowTime& r = left_few ? rows[at] : rows[left];
      std::vector<int64_t> others;  // the rest of the isolated side
      for (size_t i = left_few ? 0 : left; i < (left_few ? left : n); ++i) {
        if (rows[i].line != r.line && others.size() < 5) {
          others.push_back(rows[i].line);
        }
      }
      std::sort(others.begin(), others.end());
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", r.line, ": its time lies ", HumanSpan(gap),
          left_few ? " before" : " after", " the other ", n - isolated,
          " rows (which span ", HumanSpan(rest_span), ")",
          others.empty()
              ? ""
              : absl::StrCat(", as does line(s) ", absl::StrJoin(others, ", ")),
          "; ", kFix));
    }
  }
  if (checks.max_span_s > 0 && span > checks.max_span_s) {
    // Name the row farthest from the median.
    const double median = rows[n / 2].t;
    const RowTime& far = median - rows.front().t > rows.back().t - median
                             ? rows.front()
                             : rows.back();
    return absl::InvalidArgumentError(absl::StrCat(
        "the rows span ", HumanSpan(span), ", more than --max-span ",
        HumanSpan(checks.max_span_s), "; the farthest from the middle is line ",
        far.line, " (", HumanSpan(std::abs(far.t - median)),
        far.t < median ? " before" : " after", " the median row); ", kFix));
  }
  return absl::OkStatus();
}

bool ParseDateTime(absl::string_view s, double* seconds) {
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (s.size() < 19 || !Digits(s, 0, 4, &y) || s[4] != '-' ||
      !Digits(s, 5, 2, &mo) || s[7] != '-' || !Digits(s, 8, 2, &d) ||
      (s[10] != ' ' && s[10] != 'T') || !Digits(s, 11, 2, &h) || s[13] != ':' ||
      !Digits(s, 14, 2, &mi) || s[16] != ':' || !Digits(s, 17, 2, &se) ||
      mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) {
    return false;
  }
  double frac = 0;
  if (s.size() > 19) {
    if (s[19] != '.') {
      return false;
    }
    double scale = 0.1;
    for (size_t i = 20; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') {
        return false;
      }
      frac += (s[i] - '0') * scale;
      scale /= 10;
    }
  }
  *seconds = static_cast<double>(DaysFromCivil(y, mo, d) * 86400 + h * 3600 +
                                 mi * 60 + se) +
             frac;
  return true;
}

TraceFormat DetectFormat(absl::string_view first_line) {
  const std::string l = absl::AsciiStrToLower(first_line);
  if (absl::StartsWith(l, "timestamp,contexttokens,generatedtokens")) {
    return TraceFormat::kAzure;
  }
  if (absl::StartsWith(l, "{") &&
      l.find("\"input_length\"") != std::string::npos) {
    return TraceFormat::kMooncake;
  }
  if (absl::StartsWith(l, "gmt_create,") &&
      l.find("checkpoint_model_version_id") != std::string::npos) {
    return TraceFormat::kAlibaba;
  }
  if (absl::StartsWith(l, "timestamp,endpoint,")) {
    return TraceFormat::kCsv;
  }
  // ServeGen rate rows: number,number,number,(Gamma|Weibull|),...
  const std::vector<absl::string_view> f = absl::StrSplit(first_line, ',');
  double x = 0;
  if (f.size() == 6 && absl::SimpleAtod(f[0], &x) &&
      absl::SimpleAtod(f[1], &x)) {
    return TraceFormat::kServeGen;
  }
  return TraceFormat::kAuto;
}

absl::StatusOr<Trace> ParseAzure(absl::string_view text,
                                 const TraceChecks& checks) {
  Trace t;
  std::vector<RowTime> times;
  t.format = TraceFormat::kAzure;
  t.endpoints.push_back({"azure", {}});
  std::vector<Request>& out = t.endpoints[0].requests;
  ForEachLine(text, [&](int64_t n, absl::string_view line) {
    if (n == 1 || line.empty()) {
      return;
    }
    const std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    Request r;
    if (f.size() != 3) {
      t.bad.Add(n, absl::StrCat("want 3 fields, got ", f.size()));
    } else if (!ParseDateTime(f[0], &r.arrival_s)) {
      t.bad.Add(n, absl::StrCat("TIMESTAMP '", f[0], "' is not a date-time"));
    } else if (!ParseCount(f[1], &r.input_tokens) ||
               !ParseCount(f[2], &r.output_tokens)) {
      t.bad.Add(n, "token counts must be numbers >= 0");
    } else {
      out.push_back(r);
      times.push_back({r.arrival_s, n});
    }
  });
  if (out.empty()) {
    return NoRows("azure", t);
  }
  return Finish(std::move(t), std::move(times), checks);
}

absl::StatusOr<Trace> ParseMooncake(absl::string_view text,
                                    const TraceChecks& checks) {
  Trace t;
  std::vector<RowTime> times;
  t.format = TraceFormat::kMooncake;
  t.endpoints.push_back({"mooncake", {}});
  std::vector<Request>& out = t.endpoints[0].requests;
  out.reserve(text.size() / 200);
  ForEachLine(text, [&](int64_t n, absl::string_view line) {
    if (absl::StripAsciiWhitespace(line).empty()) {
      return;
    }
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      t.bad.Add(n, "not a JSON object");
      return;
    }
    const auto num = [&](const char* key, double* v) {
      const auto it = j.find(key);
      if (it == j.end() || !it->is_number()) {
        return false;
      }
      *v = it->get<double>();
      return *v >= 0 && std::isfinite(*v);
    };
    double ts = 0, in = 0, outl = 0;
    if (!num("timestamp", &ts) || !num("input_length", &in) ||
        !num("output_length", &outl)) {
      t.bad.Add(n, "needs numeric timestamp, input_length, output_length >= 0");
      return;
    }
    if (in > kMaxTokens || outl > kMaxTokens) {
      t.bad.Add(n, "input_length and output_length must be <= 4e9");
      return;
    }
    Request r;
    r.arrival_s = ts / 1000.0;
    r.input_tokens = static_cast<uint32_t>(in);
    r.output_tokens = static_cast<uint32_t>(outl);
    out.push_back(r);
    times.push_back({r.arrival_s, n});
  });
  if (out.empty()) {
    return NoRows("mooncake", t);
  }
  return Finish(std::move(t), std::move(times), checks);
}

absl::StatusOr<Trace> ParseAlibaba(absl::string_view text,
                                   const TraceChecks& checks) {
  Trace t;
  std::vector<RowTime> times;
  t.format = TraceFormat::kAlibaba;
  std::map<std::string, size_t> index;
  int col_time = -1, col_exec = -1, col_model = -1;
  size_t cols = 0;
  bool header_ok = true;
  ForEachLine(text, [&](int64_t n, absl::string_view line) {
    if (line.empty() || !header_ok) {
      return;
    }
    const std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    if (n == 1) {
      cols = f.size();
      for (size_t i = 0; i < f.size(); ++i) {
        const int c = static_cast<int>(i);
        if (f[i] == "gmt_create") {
          col_time = c;
        } else if (f[i] == "exec_time_seconds") {
          col_exec = c;
        } else if (f[i] == "checkpoint_model_version_id") {
          col_model = c;
        }
      }
      header_ok = col_time >= 0 && col_exec >= 0 && col_model >= 0;
      return;
    }
    if (f.size() != cols) {
      t.bad.Add(n, absl::StrCat("want ", cols, " fields, got ", f.size()));
      return;
    }
    Request r;
    double exec = 0;
    const absl::string_view model = f[static_cast<size_t>(col_model)];
    if (!ParseDateTime(f[static_cast<size_t>(col_time)], &r.arrival_s)) {
      t.bad.Add(n, "gmt_create is not a date-time");
      return;
    }
    if (model.empty()) {
      t.bad.Add(n, "checkpoint_model_version_id is empty");
      return;
    }
    if (!absl::SimpleAtod(f[static_cast<size_t>(col_exec)], &exec) ||
        !(exec >= 0) || !std::isfinite(exec)) {
      // FAILED/PENDING rows may lack a time: still a request, no service
      // time of its own (the model's is used).
      exec = -1;
    }
    if (exec > kMaxServiceSeconds) {
      t.bad.Add(n, "exec_time_seconds is over 1e6 s");
      return;
    }
    r.service_s = static_cast<float>(exec);
    auto [it, inserted] =
        index.try_emplace(std::string(model), t.endpoints.size());
    if (inserted) {
      t.endpoints.push_back({std::string(model), {}});
    }
    t.endpoints[it->second].requests.push_back(r);
    times.push_back({r.arrival_s, n});
  });
  if (!header_ok) {
    return absl::InvalidArgumentError(
        "alibaba trace needs gmt_create, exec_time_seconds and "
        "checkpoint_model_version_id columns");
  }
  if (t.endpoints.empty()) {
    return NoRows("alibaba", t);
  }
  return Finish(std::move(t), std::move(times), checks);
}

absl::StatusOr<Trace> ParseCsv(absl::string_view text,
                               const TraceChecks& checks) {
  Trace t;
  std::vector<RowTime> times;
  t.format = TraceFormat::kCsv;
  std::map<std::string, size_t> index;
  ForEachLine(text, [&](int64_t n, absl::string_view line) {
    if (n == 1 || line.empty() || line[0] == '#') {
      return;
    }
    const std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    Request r;
    if (f.size() != 4 && f.size() != 5) {
      t.bad.Add(n, absl::StrCat("want 4 or 5 fields, got ", f.size()));
      return;
    }
    if ((!absl::SimpleAtod(f[0], &r.arrival_s) &&
         !ParseDateTime(f[0], &r.arrival_s)) ||
        !std::isfinite(r.arrival_s)) {
      t.bad.Add(n, absl::StrCat("timestamp '", f[0],
                                "' is neither seconds nor a date-time"));
      return;
    }
    if (f[1].empty()) {
      t.bad.Add(n, "endpoint is empty");
      return;
    }
    if (!ParseCount(f[2], &r.input_tokens) ||
        !ParseCount(f[3], &r.output_tokens)) {
      t.bad.Add(n, "token counts must be numbers >= 0");
      return;
    }
    if (f.size() == 5 && !f[4].empty()) {
      double s = 0;
      if (!absl::SimpleAtod(f[4], &s) || !(s >= 0) ||
          !(s <= kMaxServiceSeconds)) {
        t.bad.Add(n, "service_seconds must be a number in [0, 1e6]");
        return;
      }
      r.service_s = static_cast<float>(s);
    }
    auto [it, inserted] =
        index.try_emplace(std::string(f[1]), t.endpoints.size());
    if (inserted) {
      t.endpoints.push_back({std::string(f[1]), {}});
    }
    t.endpoints[it->second].requests.push_back(r);
    times.push_back({r.arrival_s, n});
  });
  if (t.endpoints.empty()) {
    return NoRows("csv", t);
  }
  return Finish(std::move(t), std::move(times), checks);
}

}  // namespace pilotlight::sim
