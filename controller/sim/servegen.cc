#include "controller/sim/servegen.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pilotlight::sim {
namespace {
constexpr double kWindowS = 600;
}  // namespace

absl::StatusOr<RateClient> ParseRateClient(absl::string_view name,
                                           absl::string_view text, BadRows* bad,
                                           const TraceChecks& checks) {
  RateClient c;
  std::vector<RowTime> times;
  c.name = std::string(name);
  int64_t n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) {
      continue;
    }
    const std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    RateWindow w;
    double cv = 0, p2 = 0;
    if (f.size() != 6 || !absl::SimpleAtod(f[0], &w.start_s) ||
        !absl::SimpleAtod(f[1], &w.rate) || !(w.rate >= 0) ||
        !std::isfinite(w.start_s)) {
      bad->Add(n,
               absl::StrCat(name, ": want timestamp_s,rate,cv,family,p1,p2"));
      continue;
    }
    if (w.rate > kMaxRate) {
      bad->Add(n, absl::StrCat(name, ": rate ", f[1], " is above ", kMaxRate,
                               " requests/s"));
      continue;
    }
    (void)cv;
    (void)p2;
    if (f[3] == "Gamma" || f[3] == "Weibull") {
      if (!absl::SimpleAtod(f[4], &w.shape) || !(w.shape > 0)) {
        bad->Add(n, absl::StrCat(name, ": shape must be > 0"));
        continue;
      }
      w.family = f[3] == "Gamma" ? RateWindow::Family::kGamma
                                 : RateWindow::Family::kWeibull;
    } else if (!f[3].empty()) {
      bad->Add(n, absl::StrCat(name, ": unknown family '", f[3], "'"));
      continue;
    }
    if (w.rate <= 0) {
      w.family = RateWindow::Family::kIdle;
    }
    c.windows.push_back(w);
    times.push_back({w.start_s, n});
  }
  if (c.windows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no rate windows"));
  }
  if (absl::Status span = CheckSpan(std::move(times), checks); !span.ok()) {
    return absl::OutOfRangeError(absl::StrCat(name, ": ", span.message()));
  }
  std::sort(c.windows.begin(), c.windows.end(),
            [](const RateWindow& a, const RateWindow& b) {
              return a.start_s < b.start_s;
            });
  return c;
}

EndpointTrace SampleClient(const RateClient& c, const ServeGenOptions& o) {
  EndpointTrace e;
  e.name = c.name;
  const uint64_t client_seed = o.seed ^ std::hash<std::string>{}(c.name);
  const double end = o.start_s + o.duration_s;
  for (const RateWindow& w : c.windows) {
    const double w_end = w.start_s + kWindowS;
    if (w.family == RateWindow::Family::kIdle || w_end <= o.start_s ||
        w.start_s >= end) {
      continue;
    }
    // Seeded per window, so a --start/--duration slice samples exactly the
    // arrivals the full replay has in it.
    std::mt19937_64 rng(client_seed ^ (static_cast<uint64_t>(w.start_s) *
                                       0x9E3779B97F4A7C15ULL));
    const double mean = 1.0 / w.rate;
    std::function<double()> draw;
    if (w.family == RateWindow::Family::kGamma) {
      auto g = std::make_shared<std::gamma_distribution<double>>(
          w.shape, mean / w.shape);
      draw = [g, &rng] { return (*g)(rng); };
    } else {
      const double scale = mean / std::tgamma(1 + 1 / w.shape);
      auto g =
          std::make_shared<std::weibull_distribution<double>>(w.shape, scale);
      draw = [g, &rng] { return (*g)(rng); };
    }
    // Start at a random phase of the first gap, so windows do not all open
    // with an arrival.
    double t =
        w.start_s + draw() * std::uniform_real_distribution<double>(0, 1)(rng);
    while (t < w_end) {
      if (t >= o.start_s && t < end) {
        Request r;
        r.arrival_s = t - o.start_s;
        r.input_tokens = o.input_tokens;
        r.output_tokens = o.output_tokens;
        e.requests.push_back(r);
      }
      t += draw();
    }
  }
  return e;
}

Trace RateTrace(std::vector<RateClient> clients, const ServeGenOptions& o) {
  Trace t;
  t.format = TraceFormat::kServeGen;
  if (o.max_endpoints > 0 &&
      clients.size() > static_cast<size_t>(o.max_endpoints)) {
    clients.resize(static_cast<size_t>(o.max_endpoints));
  }
  double last = 0;
  for (const RateClient& c : clients) {
    t.endpoints.push_back({c.name, {}});
    if (!c.windows.empty()) {
      last = std::max(last, c.windows.back().start_s + kWindowS);
    }
  }
  t.duration_s = std::min(last - o.start_s, o.duration_s);
  auto shared = std::make_shared<std::vector<RateClient>>(std::move(clients));
  t.generate = [shared, o](size_t i) { return SampleClient((*shared)[i], o); };
  return t;
}

}  // namespace pilotlight::sim
