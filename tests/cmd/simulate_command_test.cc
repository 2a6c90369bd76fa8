#include "controller/cmd/simulate_command.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "controller/cmd/size_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pilotlight::cmd {
namespace {

using ::testing::HasSubstr;

// The bundled trace, relative to the source root (ctest's working dir).
constexpr const char* kTrace = "controller/sim/data/azure_llm_2023_code.csv";

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome Simulate(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunSimulate(args, out, err);
  return {code, out.str(), err.str()};
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) {
    k.insert(it.key());
  }
  return k;
}

// --json prints exactly the documented keys, for every policy.
TEST(SimulateCommandTest, JsonHasExactlyTheDocumentedKeys) {
  const Outcome r =
      Simulate({"--trace", kTrace, "--json", "--duration", "10m"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(Keys(j), (std::set<std::string>{"trace", "policies", "matched_slo",
                                            "verdict"}));
  EXPECT_EQ(Keys(j["trace"]),
            (std::set<std::string>{"path", "format", "requests", "endpoints",
                                   "duration_s", "warmup_s"}));
  EXPECT_EQ(j["trace"]["warmup_s"], 0);
  EXPECT_EQ(j["trace"]["format"], "azure");
  EXPECT_EQ(j["trace"]["endpoints"], 1);
  ASSERT_EQ(j["policies"].size(), 7u);
  for (const nlohmann::json& p : j["policies"]) {
    EXPECT_EQ(
        Keys(p),
        (std::set<std::string>{
            "name", "cost_usd", "gpu_hours", "requests", "cold_start_requests",
            "cold_start_fraction", "ttft_p50_s", "ttft_p99_s",
            "ttft_attainment", "tpot_attainment", "slo_attainment",
            "slo_misses", "rejected_requests", "abandoned_requests",
            "activation_timeouts", "client_retries", "pokes", "scale_events"}));
    EXPECT_EQ(p["requests"], j["trace"]["requests"]) << p["name"];
    // Every miss has one cause, and a rejected request none (it never got
    // to wait).
    int64_t misses = 0;
    for (const auto& [cause, n] : p["slo_misses"].items()) {
      misses += n.get<int64_t>();
    }
    EXPECT_EQ(misses + p["rejected_requests"].get<int64_t>(),
              std::llround((1 - p["slo_attainment"].get<double>()) *
                           p["requests"].get<double>()))
        << p["name"];
  }
  EXPECT_EQ(j["policies"][0]["name"], "pilotlight");
  const nlohmann::json& m = j["matched_slo"];
  EXPECT_EQ(Keys(m),
            (std::set<std::string>{"target", "effective_target",
                                   "max_cold_start_fraction", "policies"}));
  EXPECT_EQ(m["target"], 0.99);
  ASSERT_EQ(m["policies"].size(), 7u);
  for (const nlohmann::json& p : m["policies"]) {
    EXPECT_EQ(Keys(p), (std::set<std::string>{"name", "knob", "unit", "matched",
                                              "sweep"}));
    ASSERT_GE(p["sweep"].size(), 1u);
    EXPECT_EQ(Keys(p["sweep"][0]),
              (std::set<std::string>{"value", "cost_usd", "slo_attainment",
                                     "cold_start_fraction", "ttft_p99_s"}));
  }
  const nlohmann::json& v = j["verdict"];
  EXPECT_EQ(Keys(v),
            (std::set<std::string>{
                "beaten", "why", "pilotlight", "dominated_by", "target",
                "max_cold_start_fraction", "meets_target",
                "cheapest_matched_baseline", "matched_ratio", "frontier"}));
  EXPECT_EQ(Keys(v["pilotlight"]),
            (std::set<std::string>{"cost_usd", "slo_attainment",
                                   "cold_start_fraction"}));
  EXPECT_EQ(v["pilotlight"]["cost_usd"], j["policies"][0]["cost_usd"]);
  for (const nlohmann::json& f : v["frontier"]) {
    EXPECT_EQ(Keys(f), (std::set<std::string>{
                           "policy", "cost_at_pilotlight_attainment_usd",
                           "cost_at_pilotlight_cold_share_usd"}));
  }
  // --match-slo 0 skips the sweep, and the verdict's part that needs it.
  const Outcome none = Simulate(
      {"--trace", kTrace, "--json", "--duration", "10m", "--match-slo", "0"});
  ASSERT_EQ(none.code, kExitOk) << none.err;
  const nlohmann::json n = nlohmann::json::parse(none.out);
  EXPECT_FALSE(n.contains("matched_slo"));
  EXPECT_EQ(
      Keys(n["verdict"]),
      (std::set<std::string>{"beaten", "why", "pilotlight", "dominated_by"}));
  // Without pilotlight there is nothing to judge.
  const Outcome others =
      Simulate({"--trace", kTrace, "--json", "--duration", "10m", "--match-slo",
                "0", "--policies", "knative,keda"});
  ASSERT_EQ(others.code, kExitOk) << others.err;
  EXPECT_FALSE(nlohmann::json::parse(others.out).contains("verdict"));
  // A warm-up: the slice's requests in the trace, those after it measured.
  const Outcome warm =
      Simulate({"--trace", kTrace, "--json", "--duration", "10m", "--warmup",
                "5m", "--match-slo", "0", "--policies", "pilotlight"});
  ASSERT_EQ(warm.code, kExitOk) << warm.err;
  const nlohmann::json w = nlohmann::json::parse(warm.out);
  EXPECT_EQ(w["trace"]["warmup_s"], 300);
  EXPECT_EQ(w["trace"]["requests"], j["trace"]["requests"]);
  EXPECT_GT(w["policies"][0]["requests"], 0);
  EXPECT_LT(w["policies"][0]["requests"], w["trace"]["requests"]);
}

// --tuning runs the simulated servers at the engine's own terms: a 500 ms
// request overhead (10 ms by default) moves always-on's median TTFT by
// about the 490 ms added; an engine too slow for the TPOT SLO is refused
// as `size` would; a missing or bad file is a usage error.
TEST(SimulateCommandTest, TuningFileSetsTheEnginesTerms) {
  const std::string dir = ::testing::TempDir();
  const auto ttft_p50 = [](const Outcome& r) {
    return nlohmann::json::parse(r.out)["policies"][0]["ttft_p50_s"]
        .get<double>();
  };
  const std::vector<std::string> base = {
      "--trace",     kTrace, "--json",     "--duration", "10m",
      "--match-slo", "0",    "--policies", "always-on"};
  const std::string slow_http = dir + "/slow-http.yaml";
  {
    std::ofstream f(slow_http);
    f << "kind: SizingTuning\nrequestOverhead: 500ms\n";
  }
  std::vector<std::string> args = base;
  const Outcome plain = Simulate(args);
  args.insert(args.end(), {"--tuning", slow_http});
  const Outcome slow = Simulate(args);
  ASSERT_EQ(plain.code, kExitOk) << plain.err;
  ASSERT_EQ(slow.code, kExitOk) << slow.err;
  EXPECT_NEAR(ttft_p50(slow) - ttft_p50(plain), 0.49, 0.01);

  const std::string slow_engine = dir + "/slow-engine.yaml";
  {
    std::ofstream f(slow_engine);
    f << "kind: SizingTuning\nmemoryBandwidthUtilization: 0.1\n"
         "stepOverhead: 20ms\n";
  }
  args = base;
  args.insert(args.end(), {"--tuning", slow_engine});
  const Outcome refused = Simulate(args);
  EXPECT_EQ(refused.code, kExitUsage);
  EXPECT_THAT(refused.err, HasSubstr("does not meet the TPOT SLO"));
  args = base;
  args.insert(args.end(), {"--tuning", dir + "/none.yaml"});
  const Outcome missing = Simulate(args);
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_THAT(missing.err, HasSubstr("none.yaml: cannot open the file"));
  {
    std::ofstream f(slow_engine);
    f << "kind: SizingTuning\nstepOverhead: soon\n";
  }
  args = base;
  args.insert(args.end(), {"--tuning", slow_engine});
  const Outcome bad = Simulate(args);
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("stepOverhead: \"soon\" is not a duration"));
  std::remove(slow_http.c_str());
  std::remove(slow_engine.c_str());
}

// The activator's poke is on unless --no-poke: the slice opens at zero, so
// pilotlight is asked between ticks. (Until 2026-12-04 the flag parsing
// cleared the 10 ms default when --poke-delay was absent: no run from the
// command line had a poke.)
TEST(SimulateCommandTest, ThePokeIsOnByDefault) {
  const auto pokes = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--trace",    kTrace,        "--json",
                                     "--duration", "3m",          "--policies",
                                     "pilotlight", "--match-slo", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome r = Simulate(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return nlohmann::json::parse(r.out)["policies"][0]["pokes"].get<int64_t>();
  };
  EXPECT_GT(pokes({}), 0);
  EXPECT_GT(pokes({"--poke-delay", "50ms"}), 0);
  EXPECT_EQ(pokes({"--no-poke"}), 0);
}

// The table names every policy and the oracle ratio; the report is one
// self-contained page with inline SVG.
TEST(SimulateCommandTest, TableAndHtmlReport) {
  const std::string html = ::testing::TempDir() + "/report.html";
  const Outcome r =
      Simulate({"--trace", kTrace, "--duration", "10m", "--policies",
                "pilotlight,knative,oracle", "--report", html});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pilotlight"));
  EXPECT_THAT(r.out, HasSubstr("x oracle"));
  const std::string page = ReadAll(html);
  EXPECT_THAT(page, HasSubstr("<svg"));
  EXPECT_THAT(page, HasSubstr("id=\"summary\""));
  EXPECT_THAT(page, HasSubstr("id=\"matched\""));
  EXPECT_THAT(page, HasSubstr("cost against SLO attainment"));
  EXPECT_THAT(r.out, HasSubstr("AT MATCHED SLO"));
  // The verdict, in the table and on the page, with Knative's frontier.
  EXPECT_THAT(r.out, HasSubstr("Beaten by a simple policy on this trace? "));
  EXPECT_THAT(page, HasSubstr("id=\"verdict\""));
  const size_t frontier = page.find("id=\"frontier\"><tr><th>policy</th>");
  ASSERT_NE(frontier, std::string::npos);
  EXPECT_THAT(page.substr(frontier), HasSubstr("<tr><td>knative</td>"));
  EXPECT_THAT(page, ::testing::Not(HasSubstr("<script")));
  EXPECT_THAT(page, ::testing::Not(HasSubstr("http://")));
  // Nothing refused or abandoned: no such table.
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("never served")));
}

// Clients that give up: the table says how many, per policy; the oracle's
// replicas are ready before anyone arrives, so none of its clients do.
TEST(SimulateCommandTest, ClientsThatGiveUpAreCounted) {
  const Outcome r =
      Simulate({"--trace", kTrace, "--duration", "10m", "--policies",
                "knative,oracle", "--client-timeout", "1s", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["policies"][0]["abandoned_requests"].get<int64_t>(), 0);
  EXPECT_EQ(j["policies"][1]["abandoned_requests"].get<int64_t>(), 0);
  const std::string html = ::testing::TempDir() + "/gave_up.html";
  const Outcome table =
      Simulate({"--trace", kTrace, "--duration", "10m", "--policies",
                "knative,oracle", "--client-timeout", "1s", "--report", html});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_THAT(table.out, HasSubstr("Requests never served:"));
  EXPECT_THAT(table.out, HasSubstr("gave up waiting"));
  EXPECT_THAT(ReadAll(html), HasSubstr("<th>gave up waiting</th>"));
}

// --client-retries: clients that gave up try again; fewer give up for
// good, and the tries show in the JSON and as a column of the table.
TEST(SimulateCommandTest, ClientsThatTryAgainAreCounted) {
  const std::vector<std::string> base = {
      "--trace",          kTrace, "--duration", "10m", "--policies", "knative",
      "--client-timeout", "1s",   "--json"};
  const Outcome once = Simulate(base);
  std::vector<std::string> retrying = base;
  retrying.insert(retrying.end(), {"--client-retries", "2"});
  const Outcome twice = Simulate(retrying);
  ASSERT_EQ(once.code, kExitOk) << once.err;
  ASSERT_EQ(twice.code, kExitOk) << twice.err;
  const nlohmann::json a = nlohmann::json::parse(once.out)["policies"][0];
  const nlohmann::json b = nlohmann::json::parse(twice.out)["policies"][0];
  EXPECT_EQ(a["client_retries"].get<int64_t>(), 0);
  EXPECT_GT(b["client_retries"].get<int64_t>(), 0);
  EXPECT_LT(b["abandoned_requests"].get<int64_t>(),
            a["abandoned_requests"].get<int64_t>());
  // A retry is not a new request.
  EXPECT_EQ(b["requests"].get<int64_t>(), a["requests"].get<int64_t>());
  retrying.pop_back();  // "2"
  retrying.pop_back();  // "--client-retries"
  retrying.erase(std::find(retrying.begin(), retrying.end(), "--json"));
  const std::string html = ::testing::TempDir() + "/tried_again.html";
  retrying.insert(retrying.end(), {"--client-retries", "2", "--report", html});
  const Outcome table = Simulate(retrying);
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_THAT(table.out, HasSubstr("tries made again"));
  EXPECT_THAT(ReadAll(html), HasSubstr("<th>tries made again</th>"));
}

// --sleep-pool: the pool pilotlight's engines took, in the table and the
// JSON (the baselines keep none asleep, so have none).
TEST(SimulateCommandTest, SleepPoolSaysWhatPoolItsEnginesTook) {
  const std::vector<std::string> args = {"--trace",
                                         kTrace,
                                         "--sleep-pool",
                                         "--match-slo",
                                         "0",
                                         "--policies",
                                         "pilotlight,keepalive-10m"};
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const Outcome r = Simulate(json_args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& p = j["policies"][0];
  ASSERT_TRUE(p.contains("sleep_pool")) << p.dump();
  const nlohmann::json& pool = p["sleep_pool"];
  EXPECT_EQ(Keys(pool), (std::set<std::string>{
                            "peak_asleep", "peak_awake", "peak_gpus",
                            "gpu_hours", "cost_usd", "fixed_cost_usd",
                            "billed_asleep_usd", "billed_woken_usd", "sized"}));
  EXPECT_GE(pool["peak_asleep"].get<int>(), 1);
  EXPECT_GE(pool["peak_gpus"].get<int>(), pool["peak_awake"].get<int>());
  EXPECT_GT(pool["gpu_hours"].get<double>(), 0);
  EXPECT_GE(pool["fixed_cost_usd"].get<double>(),
            pool["cost_usd"].get<double>());
  EXPECT_GT(pool["billed_asleep_usd"].get<double>(), 0);
  EXPECT_LT(pool["billed_asleep_usd"].get<double>() +
                pool["billed_woken_usd"].get<double>(),
            p["cost_usd"].get<double>());
  // The same pool sized by the controller's rule: at least the engines'
  // own GPUs at their peak, a spare beyond, and no more than a pool of the
  // peak's size plus the spare all along.
  ASSERT_TRUE(pool.contains("sized")) << pool.dump();
  const nlohmann::json& sized = pool["sized"];
  EXPECT_EQ(Keys(sized),
            (std::set<std::string>{"peak_pods", "gpu_hours", "cost_usd",
                                   "wakes_without_a_free_pod",
                                   "engine_seconds_short"}));
  EXPECT_GE(sized["peak_pods"].get<int>(), pool["peak_awake"].get<int>() + 1);
  EXPECT_GT(sized["gpu_hours"].get<double>(), pool["gpu_hours"].get<double>());
  EXPECT_LE(
      sized["cost_usd"].get<double>(),
      pool["fixed_cost_usd"].get<double>() *
          (sized["peak_pods"].get<double>() / pool["peak_gpus"].get<double>()));
  EXPECT_LE(sized["wakes_without_a_free_pod"].get<int>(),
            p["wakes"].get<int>());
  EXPECT_FALSE(j["policies"][1].contains("sleep_pool"));
  const Outcome table = Simulate(args);
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_THAT(table.out,
              HasSubstr("Sleep pool (a100-80gb, 7 engines asleep a GPU"));
  EXPECT_THAT(table.out, HasSubstr("The same pool sized by the controller "
                                   "(1 spare pod, kept 1m; a new pod Ready"));
}

// Bad input: usage errors with a clear message and exit code 2.
TEST(SimulateCommandTest, BadInput) {
  struct Case {
    std::vector<std::string> args;
    const char* want;
  };
  const Case cases[] = {
      {{}, "--trace FILE is required"},
      {{"--trace", "/nonexistent.csv"}, "cannot open"},
      {{"--trace", "CMakeLists.txt"}, "is not a trace"},
      {{"--trace", kTrace, "--policies", "magic"}, "unknown policy 'magic'"},
      {{"--trace", kTrace, "--gpu", "h900"}, "variants[0].gpuClass"},
      {{"--trace", kTrace, "--format", "parquet"}, "unknown trace format"},
      {{"--trace", kTrace, "--mode", "Sometimes"}, "Realtime or Batch"},
      {{"--trace", kTrace, "--match-slo", "1.5"}, "--match-slo wants"},
      {{"--trace", kTrace, "--ttft-per-1k-prompt", "-1s"},
       "--ttft-per-1k-prompt must be >= 0"},
      {{"--trace", kTrace, "--tick", "10ms"}, "--tick must be in"},
      {{"--trace", kTrace, "--tick-phase", "2s"}, "--tick-phase must be in"},
      {{"--trace", kTrace, "--rate-window", "-1s"}, "--rate-window must be"},
      {{"--trace", kTrace, "--pool-gpus", "-1"}, "--pool-gpus must be"},
      // g6.xlarge's 16 GiB cannot hold llama-3.1-8b's 15 GiB asleep.
      {{"--trace", kTrace, "--sleep-pool", "--gpu", "l4"},
       "cannot hold llama-3.1-8b's 15.0 GiB of weights asleep"},
      {{"--trace", kTrace, "--wake", "1s"}, "--wake needs --sleep-pool"},
      {{"--trace", kTrace, "--sleep-pool", "--wake", "0s"},
       "--wake must be > 0"},
      {{"--trace", kTrace, "--tick-phase", "-1s"}, "--tick-phase must be in"},
      {{"--trace", kTrace, "--epoch", "-5"}, "--epoch wants Unix seconds"},
      {{"--trace", kTrace, "--report-lag", "2s"}, "--report-lag must be in"},
      {{"--trace", kTrace, "--cold-start-resolution", "-1s"},
       "--cold-start-resolution must be"},
      {{"--trace", kTrace, "--epoch", "soon"}, "--epoch"},
      {{"--trace", kTrace, "--warmup", "-1s"}, "--warmup must be >= 0"},
      {{"--trace", kTrace, "--client-timeout", "0s"},
       "--client-timeout must be > 0"},
      {{"--trace", kTrace, "--client-retries", "-1"},
       "--client-retries must be in [0, 100]"},
      {{"--trace", kTrace, "--warmup", "2h"}, "leaves nothing of the"},
      {{"--trace", kTrace, "--requests", "/nonexistent/dir/requests.csv"},
       "cannot write /nonexistent/dir/requests.csv"},
  };
  for (const Case& c : cases) {
    const Outcome r = Simulate(c.args);
    EXPECT_EQ(r.code, kExitUsage) << c.want;
    EXPECT_THAT(r.err, HasSubstr(c.want));
  }
}

// --timeline: each policy's series as CSV rows, one a tick at most, the
// cumulative cold starts ending at the run's count.
TEST(SimulateCommandTest, TimelineCsv) {
  const std::string path = ::testing::TempDir() + "/timeline.csv";
  const Outcome r =
      Simulate({"--trace", kTrace, "--policies", "pilotlight,always-on",
                "--match-slo", "0", "--json", "--timeline", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "policy,t_s,replicas,ready,demand,cold_start_requests,cost_usd");
  std::map<std::string, int> rows;
  std::string last_pilotlight;
  while (std::getline(in, line)) {
    const std::string policy = line.substr(0, line.find(','));
    ++rows[policy];
    if (policy == "pilotlight") {
      last_pilotlight = line;
    }
  }
  EXPECT_GE(rows["pilotlight"], 100);
  EXPECT_GE(rows["always-on"], 100);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::vector<std::string> f = absl::StrSplit(last_pilotlight, ',');
  ASSERT_EQ(f.size(), 7u);
  EXPECT_EQ(f[5], std::to_string(j["policies"][0].value("cold_start_requests",
                                                        int64_t{-1})));
}

// --requests: one row per request served and policy, as they start; the
// cold ones add up to the run's cold-start requests; a request starts no
// earlier than it arrives and its first token no earlier than it starts.
TEST(SimulateCommandTest, RequestsCsv) {
  const std::string path = ::testing::TempDir() + "/requests.csv";
  const Outcome r =
      Simulate({"--trace", kTrace, "--policies", "pilotlight,keepalive-10m",
                "--match-slo", "0", "--json", "--requests", path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "policy,endpoint,arrival_s,start_s,ttft_s,done_s,cold,replica,"
            "variant");
  std::map<std::string, int64_t> rows;
  std::map<std::string, int64_t> cold;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    ASSERT_EQ(f.size(), 9u) << line;
    double arrival = 0;
    double start = 0;
    double ttft = 0;
    double done = 0;
    ASSERT_TRUE(absl::SimpleAtod(f[2], &arrival) &&
                absl::SimpleAtod(f[3], &start) &&
                absl::SimpleAtod(f[4], &ttft) && absl::SimpleAtod(f[5], &done))
        << line;
    EXPECT_GE(start, arrival) << line;
    EXPECT_GE(ttft + 0.002, start - arrival) << line;  // rounding of both
    EXPECT_GE(done, start) << line;
    ++rows[f[0]];
    cold[f[0]] += f[6] == "1" ? 1 : 0;
  }
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["policies"].size(), 2u);
  for (const nlohmann::json& p : j["policies"]) {
    const std::string name = p.at("name").get<std::string>();
    EXPECT_EQ(rows[name], p.value("requests", int64_t{-1}) -
                              p.value("rejected_requests", int64_t{0}))
        << name;
    EXPECT_EQ(cold[name], p.value("cold_start_requests", int64_t{-1})) << name;
  }
  EXPECT_GT(cold["pilotlight"] + cold["keepalive-10m"], 0);
}

}  // namespace
}  // namespace pilotlight::cmd
