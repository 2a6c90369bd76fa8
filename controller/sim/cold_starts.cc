#include "controller/sim/cold_starts.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/policy/time_window.h"

namespace pilotlight::sim {

absl::StatusOr<std::vector<double>> LoadColdStartSamples(
    const std::string& path, BadRows* bad) {
  absl::StatusOr<std::string> text = ReadMaybeGzip(path);
  if (!text.ok()) {
    return text.status();
  }
  std::vector<double> out;
  int column = -1;
  int64_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    const std::vector<absl::string_view> f = absl::StrSplit(line, ',');
    if (line_no == 1) {
      double x = 0;
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "value") {
          column = static_cast<int>(i);
        }
      }
      if (column >= 0 || !absl::SimpleAtod(f.back(), &x)) {
        if (column < 0) {
          column = static_cast<int>(f.size()) - 1;
        }
        continue;  // a header line
      }
      column = static_cast<int>(f.size()) - 1;  // no header: the last column
    }
    double ms = 0;
    if (static_cast<size_t>(column) >= f.size() ||
        !absl::SimpleAtod(f[static_cast<size_t>(column)], &ms) || !(ms > 0)) {
      bad->Add(line_no, "cold-start value must be a number of ms > 0");
      continue;
    }
    out.push_back(ms / 1000.0);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no cold-start values (want a `value` column in ms)"));
  }
  return out;
}

ColdStarts::ColdStarts(const SimConfig& config,
                       const std::vector<ServiceModel>& models)
    : config_(config),
      models_(models),
      learned_(models.size()),
      stats_(models.size()),
      rng_(config.seed ^ 0xC01DULL) {}

double ColdStarts::Draw(int variant) {
  if (config_.cold_start_samples.empty()) {
    return absl::ToDoubleSeconds(
        models_[static_cast<size_t>(variant)].cold_start);
  }
  std::uniform_int_distribution<size_t> pick(
      0, config_.cold_start_samples.size() - 1);
  return config_.cold_start_samples[pick(rng_)];
}

double ColdStarts::Longest() const {
  double longest = 0;
  for (const ServiceModel& m : models_) {
    longest = std::max(longest, absl::ToDoubleSeconds(m.cold_start));
  }
  for (double s : config_.cold_start_samples) {
    longest = std::max(longest, s);
  }
  return longest;
}

double ColdStarts::Measured(double requested_s, double ready_s) const {
  const absl::Duration res = config_.cold_start_resolution;
  if (res <= absl::ZeroDuration()) {
    return ready_s - requested_s;
  }
  const auto stamp = [&](double s) {
    return policy::FloorDiv(
        config_.epoch + absl::Seconds(s) - absl::UnixEpoch(), res);
  };
  return absl::ToDoubleSeconds(res * (stamp(ready_s) - stamp(requested_s)));
}

// Refreshes the p50/p90 the policies see once per replica start, not per
// tick.
void ColdStarts::Learn(int variant, double requested_s, double ready_s) {
  const auto v = static_cast<size_t>(variant);
  std::vector<double>& l = learned_[v];
  l.push_back(Measured(requested_s, ready_s));
  if (l.size() > 64) {
    l.erase(l.begin());
  }
  std::vector<double> s = l;
  std::sort(s.begin(), s.end());
  policy::ColdStartStats& stats = stats_[v];
  stats.samples = static_cast<int32_t>(s.size());
  stats.p50 = absl::Seconds(s[s.size() / 2]);
  stats.p90 = absl::Seconds(s[std::min(s.size() - 1, s.size() * 9 / 10)]);
}

absl::Duration ColdStarts::Predicted() const {
  absl::Duration lead;
  for (size_t v = 0; v < models_.size(); ++v) {
    const policy::ColdStartStats& s = stats_[v];
    lead = std::max(lead, s.samples >= 3 ? s.p90 : models_[v].cold_start);
  }
  return lead;
}

}  // namespace pilotlight::sim
