// Idle skipping on real traces: every policy replayed stepping every tick
// and skipping idle time, the results compared figure by figure (any
// difference fails the run), and the wall time of each printed with the
// speed-up. Run from the source root (ctest does).
//
//   sim_idle_skip_bench [--endpoints N] [--duration SECONDS] TRACE...
//
// --endpoints and --duration apply to the traces after them (ServeGen's
// dense clients need a shorter cut than the sparse traces).
//
// A trace that does not exist is reported and skipped (the shared traces
// live outside the repository); the bundled one always exists.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "controller/model/catalog.h"
#include "controller/model/model_profile.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/run.h"
#include "controller/sim/simulator.h"
#include "tests/sim/one_variant_config.h"

namespace pilotlight::sim {
namespace {

// The first figure that differs, or "".
std::string Difference(const SimResult& a, const SimResult& b) {
  const struct {
    const char* name;
    double x, y;
  } figures[] = {
      {"requests", static_cast<double>(a.requests),
       static_cast<double>(b.requests)},
      {"cold starts", static_cast<double>(a.cold_start_requests),
       static_cast<double>(b.cold_start_requests)},
      {"within SLO", static_cast<double>(a.within_ttft_slo),
       static_cast<double>(b.within_ttft_slo)},
      {"cost", a.cost_usd, b.cost_usd},
      {"GPU seconds", a.gpu_seconds, b.gpu_seconds},
      {"scale events", static_cast<double>(a.scale_events),
       static_cast<double>(b.scale_events)},
      {"preemptions", static_cast<double>(a.preemptions),
       static_cast<double>(b.preemptions)},
      {"rejected", static_cast<double>(a.rejected_requests),
       static_cast<double>(b.rejected_requests)},
      {"pokes", static_cast<double>(a.pokes), static_cast<double>(b.pokes)},
      {"peak", static_cast<double>(a.peak_replicas),
       static_cast<double>(b.peak_replicas)},
      {"TTFT p50", a.ttft.Quantile(0.5), b.ttft.Quantile(0.5)},
      {"TTFT p99", a.ttft.Quantile(0.99), b.ttft.Quantile(0.99)},
  };
  for (const auto& f : figures) {
    if (f.x != f.y) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "%s %.17g vs %.17g", f.name, f.x, f.y);
      return buf;
    }
  }
  return "";
}

int Main(int argc, char** argv) {
  ServeGenOptions window;
  std::vector<std::pair<std::string, ServeGenOptions>> traces;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--endpoints" && i + 1 < argc) {
      if (!absl::SimpleAtoi(argv[++i], &window.max_endpoints)) {
        std::fprintf(stderr, "--endpoints wants a number\n");
        return 2;
      }
    } else if (a == "--duration" && i + 1 < argc) {
      if (!absl::SimpleAtod(argv[++i], &window.duration_s)) {
        std::fprintf(stderr, "--duration wants seconds\n");
        return 2;
      }
    } else {
      traces.emplace_back(a, window);
    }
  }
  if (traces.empty()) {
    traces.emplace_back("controller/sim/data/azure_llm_2023_code.csv", window);
  }
  const model::Catalog catalog = *model::Catalog::Default();
  const SimConfig config = OneVariantConfig(catalog);

  int failures = 0;
  std::printf("%-48s %9s %5s %9s %9s %8s %8s  %s\n", "trace", "requests", "eps",
              "step s", "skip s", "speed-up", "skipped", "result");
  for (const auto& [path, cut] : traces) {
    if (!std::filesystem::exists(path)) {
      std::printf("%-48s not found: skipped\n", path.c_str());
      continue;
    }
    absl::StatusOr<Trace> t = LoadTrace(path, TraceFormat::kAuto, cut);
    if (!t.ok()) {
      std::printf("%-48s FAILED to load: %s\n", path.c_str(),
                  std::string(t.status().message()).c_str());
      ++failures;
      continue;
    }
    RunReport report[2];
    double seconds[2] = {0, 0};
    for (int skip = 0; skip < 2; ++skip) {
      SimConfig c = config;
      c.skip_idle = skip == 1;
      const auto begin = std::chrono::steady_clock::now();
      absl::StatusOr<RunReport> r = RunSimulation(*t, c, {});
      seconds[skip] = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - begin)
                          .count();
      if (!r.ok()) {
        std::printf("%-48s FAILED: %s\n", path.c_str(),
                    std::string(r.status().message()).c_str());
        ++failures;
        break;
      }
      report[skip] = *std::move(r);
    }
    if (report[1].policies.empty()) {
      continue;
    }
    std::string result = "same";
    int64_t skipped = 0;
    int64_t ticks = 0;
    for (size_t p = 0; p < report[0].policies.size(); ++p) {
      const SimResult& step = report[0].policies[p].result;
      const SimResult& skip = report[1].policies[p].result;
      skipped += skip.skipped_ticks;
      ticks += step.ticks;
      if (std::string d = Difference(step, skip); !d.empty()) {
        result = "DIFFERENT: " + report[0].policies[p].name + " " + d;
        ++failures;
        break;
      }
    }
    const std::string name =
        std::filesystem::path(path).filename().string().substr(0, 48);
    std::printf(
        "%-48s %9lld %5d %9.2f %9.2f %7.1fx %7.1f%%  %s\n", name.c_str(),
        static_cast<long long>(report[0].requests), report[0].endpoints,
        seconds[0], seconds[1], seconds[0] / std::max(seconds[1], 1e-9),
        ticks > 0
            ? 100.0 * static_cast<double>(skipped) / static_cast<double>(ticks)
            : 0.0,
        result.c_str());
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace pilotlight::sim

int main(int argc, char** argv) { return pilotlight::sim::Main(argc, argv); }
