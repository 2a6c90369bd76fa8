// The traffic records a controller keeps for re-tuning (sim/
// traffic_record.h), over many endpoints of synthetic traffic: a tenth busy
// (Poisson, 20 requests/s), three tenths moderate (0.2/s), six tenths
// sparse (4 an hour). Each is looked at every 2 s (the controller's tick)
// with the arrivals since, as the activator reports them. Prints the
// bytes per endpoint (mean and largest, by class), the history each class
// keeps, and the time per look.
//
//   traffic_record_bench [--endpoints N] [--hours H]   (default 10000, 24)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "controller/sim/traffic_record.h"
#include "tests/bench/traffic_mix.h"

namespace pilotlight::sim {
namespace {

using Class = bench::TrafficClass;
constexpr const auto& kClasses = bench::kTrafficMix;

int Run(int endpoints, double hours) {
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  const absl::Duration tick = absl::Seconds(2);
  const int64_t ticks = static_cast<int64_t>(hours * 1800);
  std::vector<TrafficRecord> records(static_cast<size_t>(endpoints));
  std::vector<int> cls(static_cast<size_t>(endpoints));
  std::vector<std::poisson_distribution<int64_t>> arrivals;
  for (const Class& c : kClasses) {
    arrivals.emplace_back(c.rate * absl::ToDoubleSeconds(tick));
  }
  for (int i = 0; i < endpoints; ++i) {
    const double x = (i + 0.5) / endpoints;
    cls[static_cast<size_t>(i)] = x < kClasses[0].share ? 0
                                  : x < kClasses[0].share + kClasses[1].share
                                      ? 1
                                      : 2;
  }
  std::mt19937_64 rng(42);
  int64_t looks = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < ticks; ++k) {
    const absl::Time now = t0 + tick * k;
    for (int i = 0; i < endpoints; ++i) {
      auto& dist = arrivals[static_cast<size_t>(cls[static_cast<size_t>(i)])];
      records[static_cast<size_t>(i)].Add(now, dist(rng));
    }
    looks += endpoints;
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("traffic records: %d endpoints, %.0f h of looks every 2 s\n",
              endpoints, hours);
  std::printf("%-18s %9s %12s %12s %14s\n", "CLASS", "ENDPOINTS", "MEAN-KIB",
              "MAX-KIB", "HISTORY-MEAN-H");
  double total_bytes = 0;
  for (size_t c = 0; c < std::size(kClasses); ++c) {
    int n = 0;
    double bytes = 0;
    double max_bytes = 0;
    double covered_h = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      if (cls[i] != static_cast<int>(c)) {
        continue;
      }
      ++n;
      const double b = static_cast<double>(records[i].bytes());
      bytes += b;
      max_bytes = std::max(max_bytes, b);
      covered_h += absl::ToDoubleHours(records[i].Covered());
    }
    total_bytes += bytes;
    std::printf("%-18s %9d %12.2f %12.2f %14.2f\n", kClasses[c].name, n,
                n > 0 ? bytes / n / 1024 : 0.0, max_bytes / 1024,
                n > 0 ? covered_h / n : 0.0);
  }
  std::printf(
      "all: %.2f KiB per endpoint on average (target <= 48), "
      "%.1f ns per look (%.3g looks)\n",
      total_bytes / endpoints / 1024,
      looks > 0 ? wall * 1e9 / static_cast<double>(looks) : 0.0,
      static_cast<double>(looks));
  return total_bytes / endpoints <= 48 * 1024 ? 0 : 1;
}

}  // namespace
}  // namespace pilotlight::sim

int main(int argc, char** argv) {
  int endpoints = 10000;
  double hours = 24;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--endpoints") == 0) {
      endpoints = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--hours") == 0) {
      hours = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [--endpoints N] [--hours H]\n", argv[0]);
      return 2;
    }
  }
  if (endpoints <= 0 || !(hours > 0)) {
    std::fprintf(stderr, "--endpoints and --hours must be positive\n");
    return 2;
  }
  return pilotlight::sim::Run(endpoints, hours);
}
