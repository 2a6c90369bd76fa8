#include "controller/sim/load_trace.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace pilotlight::sim {
namespace {

absl::string_view FirstLine(absl::string_view text) {
  absl::string_view line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

std::string Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path
                                                      : path.substr(slash + 1));
}

// "chunk-12-trace.csv" -> 12, for a numeric client order.
int64_t ClientNumber(absl::string_view name) {
  absl::string_view s = name;
  absl::ConsumePrefix(&s, "chunk-");
  int64_t n = 0;
  const size_t dash = s.find('-');
  return absl::SimpleAtoi(s.substr(0, dash), &n) ? n : -1;
}

absl::StatusOr<Trace> ParseText(absl::string_view text, TraceFormat f,
                                const TraceChecks& checks) {
  switch (f) {
    case TraceFormat::kAzure:
      return ParseAzure(text, checks);
    case TraceFormat::kMooncake:
      return ParseMooncake(text, checks);
    case TraceFormat::kAlibaba:
      return ParseAlibaba(text, checks);
    case TraceFormat::kCsv:
      return ParseCsv(text, checks);
    default:
      return absl::InternalError("ParseText: not a per-request format");
  }
}

// Applies --start/--duration/--endpoints to a per-request trace.
void Restrict(Trace& t, const ServeGenOptions& w) {
  if (w.max_endpoints > 0 &&
      t.endpoints.size() > static_cast<size_t>(w.max_endpoints)) {
    t.endpoints.resize(static_cast<size_t>(w.max_endpoints));
  }
  if (w.start_s <= 0 && std::isinf(w.duration_s)) {
    return;
  }
  const double end = w.start_s + w.duration_s;
  for (EndpointTrace& e : t.endpoints) {
    std::vector<Request> kept;
    for (Request r : e.requests) {
      if (r.arrival_s >= w.start_s && r.arrival_s < end) {
        r.arrival_s -= w.start_s;
        kept.push_back(r);
      }
    }
    e.requests = std::move(kept);
  }
  t.duration_s =
      std::max(0.0, std::min(t.duration_s - w.start_s, w.duration_s));
}

}  // namespace

absl::StatusOr<Trace> LoadTrace(const std::string& path, TraceFormat format,
                                const ServeGenOptions& window) {
  absl::StatusOr<std::string> data = ReadMaybeGzip(path);
  if (!data.ok()) {
    return data.status();
  }
  return LoadTraceData(*std::move(data), path, format, window);
}

namespace {

// A ServeGen trace from its per-client rate files (the members of a tar,
// or one file), clients in the order of their numbers.
absl::StatusOr<Trace> LoadServeGen(const std::string& path,
                                   const std::vector<TarMember>& members,
                                   bool is_tar, const ServeGenOptions& window) {
  BadRows bad;
  std::vector<std::pair<int64_t, RateClient>> clients;
  for (const TarMember& m : members) {
    if (is_tar && !absl::EndsWith(m.name, "-trace.csv")) {
      continue;
    }
    absl::StatusOr<RateClient> c =
        ParseRateClient(Basename(m.name), m.data, &bad, window.checks);
    if (c.status().code() == absl::StatusCode::kOutOfRange) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", c.status().message()));
    }
    if (!c.ok()) {
      bad.Add(0, c.status().message());
      continue;
    }
    c->name = absl::StrCat("client-", ClientNumber(c->name) >= 0
                                          ? absl::StrCat(ClientNumber(c->name))
                                          : c->name);
    clients.emplace_back(ClientNumber(Basename(m.name)), std::move(*c));
  }
  if (clients.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no ServeGen client rate files"));
  }
  std::sort(clients.begin(), clients.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<RateClient> sorted;
  sorted.reserve(clients.size());
  for (auto& [n, c] : clients) {
    sorted.push_back(std::move(c));
  }
  Trace t = RateTrace(std::move(sorted), window);
  t.bad = std::move(bad);
  return t;
}

// The members of a tar archive with any bytes, or nothing when `data` is
// not one.
absl::StatusOr<std::vector<TarMember>> TarMembers(const std::string& path,
                                                  absl::string_view data,
                                                  bool is_tar) {
  std::vector<TarMember> members;
  if (!is_tar) {
    return members;
  }
  absl::StatusOr<std::vector<TarMember>> m = ListTar(data);
  if (!m.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", m.status().message()));
  }
  members = std::move(*m);
  members.erase(
      std::remove_if(members.begin(), members.end(),
                     [](const TarMember& x) { return x.data.empty(); }),
      members.end());
  if (members.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty archive"));
  }
  return members;
}

}  // namespace

absl::StatusOr<Trace> LoadTraceData(std::string raw, const std::string& path,
                                    TraceFormat format,
                                    const ServeGenOptions& window) {
  absl::StatusOr<std::string> data = MaybeGunzip(std::move(raw), path);
  if (!data.ok()) {
    return data.status();
  }
  const bool is_tar = data->size() >= 512 && data->substr(257, 5) == "ustar";
  absl::StatusOr<std::vector<TarMember>> members =
      TarMembers(path, *data, is_tar);
  if (!members.ok()) {
    return members.status();
  }
  const absl::string_view head = is_tar ? (*members)[0].data : *data;
  if (format == TraceFormat::kAuto) {
    format = DetectFormat(FirstLine(head));
    if (format == TraceFormat::kAuto) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " is not a trace: its first line '",
          FirstLine(head).substr(0, 60),
          "' matches no known format (azure, mooncake, alibaba, servegen, "
          "csv); see docs/simulator.md or pass --format"));
    }
  }
  Trace t;
  if (format == TraceFormat::kServeGen) {
    if (!is_tar) {
      members->push_back({Basename(path), *data});
    }
    absl::StatusOr<Trace> rates = LoadServeGen(path, *members, is_tar, window);
    if (!rates.ok()) {
      return rates.status();
    }
    t = *std::move(rates);
  } else {
    if (is_tar) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a tar archive of ", TraceFormatName(format),
                       " is not supported; extract the one file"));
    }
    absl::StatusOr<Trace> parsed = ParseText(*data, format, window.checks);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", parsed.status().message()));
    }
    t = std::move(*parsed);
    Restrict(t, window);
  }
  t.path = path;
  t.format = format;
  return t;
}

}  // namespace pilotlight::sim
