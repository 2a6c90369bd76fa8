#include "controller/sim/trace.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "controller/sim/load_trace.h"
#include "controller/sim/servegen.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::sim {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

void WriteGzip(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
}

// A minimal ustar archive of (name, contents) members.
std::string Tar(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  for (const auto& [name, data] : files) {
    std::string h(512, '\0');
    h.replace(0, name.size(), name);
    char size[12];
    std::snprintf(size, sizeof(size), "%011o",
                  static_cast<unsigned>(data.size()));
    h.replace(124, 11, size);
    h[156] = '0';
    h.replace(257, 5, "ustar");
    out += h + data + std::string((512 - data.size() % 512) % 512, '\0');
  }
  return out + std::string(1024, '\0');
}

// Each format's parser on good and bad rows: bad rows are counted with the
// line and why, good ones kept, times rebased to the first arrival.
TEST(TraceTest, AzureCountsBadRows) {
  absl::StatusOr<Trace> t = ParseAzure(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:17:03.9799600,4808,10\n"
      "2023-11-16 18:17:05.4799600,100,x\n"
      "not-a-date,1,1\n"
      "2023-11-16 18:17:04.4799600,3180,8\n");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->endpoints.size(), 1u);
  const auto& r = t->endpoints[0].requests;
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0);
  EXPECT_NEAR(r[1].arrival_s, 0.5, 1e-6);
  EXPECT_EQ(r[1].input_tokens, 3180u);
  EXPECT_EQ(t->bad.count, 2);
  EXPECT_THAT(t->bad.examples[0], HasSubstr("line 3"));
  EXPECT_THAT(t->bad.examples[1], HasSubstr("line 4: TIMESTAMP"));
}

TEST(TraceTest, MooncakeSkipsMalformedJson) {
  absl::StatusOr<Trace> t = ParseMooncake(
      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n"
      "{\"timestamp\": 1500, \"input_length\": 20\n"
      "{\"timestamp\": 3000, \"input_length\": 7, \"output_length\": 2, "
      "\"hash_ids\": [1]}\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->endpoints[0].requests.size(), 2u);
  EXPECT_DOUBLE_EQ(t->endpoints[0].requests[1].arrival_s, 3.0);
  EXPECT_EQ(t->bad.count, 1);
}

TEST(TraceTest, AlibabaOneEndpointPerModelWithServiceTimes) {
  absl::StatusOr<Trace> t = ParseAlibaba(
      "gmt_create,predict_type,predict_status,exec_time_seconds,groupId,"
      "prompt_length,negative_prompt_length,num_images_per_prompt,"
      "num_inference_steps,checkpoint_model_version_id,num_lora\n"
      "2024-11-15 16:57:50,TXT_2_IMG,SUCCEED,32.0,G0,63.0,26.0,1.0,30.0,M0,0\n"
      "2024-11-15 16:58:00,TXT_2_IMG,SUCCEED,12.5,G1,63.0,,1.0,30.0,M1,0\n"
      "2024-11-15 16:58:10,TXT_2_IMG,FAILED,,G1,63.0,,1.0,30.0,M0,0\n"
      "2024-11-15 16:58:20,TXT_2_IMG,SUCCEED,1.0,G1,63.0\n");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->endpoints.size(), 2u);
  EXPECT_EQ(t->endpoints[0].name, "M0");
  EXPECT_EQ(t->endpoints[0].requests.size(), 2u);
  EXPECT_FLOAT_EQ(t->endpoints[0].requests[0].service_s, 32.0F);
  EXPECT_LT(t->endpoints[0].requests[1].service_s, 0);  // failed: no time
  EXPECT_DOUBLE_EQ(t->endpoints[1].requests[0].arrival_s, 10);
  EXPECT_EQ(t->bad.count, 1);
}

TEST(TraceTest, PlainCsvEndpointsAndServiceSeconds) {
  absl::StatusOr<Trace> t = ParseCsv(
      "timestamp,endpoint,input_tokens,output_tokens,service_seconds\n"
      "10,a,100,20\n"
      "12,b,100,20,1.5\n"
      "11,a,50,5,\n"
      "13,,1,1\n"
      "x,a,1,1\n");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->endpoints.size(), 2u);
  EXPECT_EQ(t->endpoints[0].requests.size(), 2u);
  EXPECT_DOUBLE_EQ(t->endpoints[0].requests[1].arrival_s, 1);
  EXPECT_FLOAT_EQ(t->endpoints[1].requests[0].service_s, 1.5F);
  EXPECT_EQ(t->bad.count, 2);
  EXPECT_DOUBLE_EQ(t->duration_s, 2);
}

TEST(TraceTest, DetectFormatTable) {
  struct Case {
    const char* line;
    TraceFormat want;
  };
  const Case cases[] = {
      {"TIMESTAMP,ContextTokens,GeneratedTokens", TraceFormat::kAzure},
      {"{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}",
       TraceFormat::kMooncake},
      {"gmt_create,predict_type,x,checkpoint_model_version_id",
       TraceFormat::kAlibaba},
      {"timestamp,endpoint,input_tokens,output_tokens", TraceFormat::kCsv},
      {"143400,0.0766,1.15,Gamma,0.748,0.044", TraceFormat::kServeGen},
      {"hello world", TraceFormat::kAuto},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DetectFormat(c.line), c.want) << c.line;
  }
}

// Files: gzip is read directly; a non-trace is refused with a clear message.
// One row years away from the rest (a changed year, or nanoseconds where
// milliseconds were meant) used to make `simulate` step its tick across the
// years; now the load is refused, naming that row's line.
TEST(TraceTest, CorruptTimestampsAreRefusedNamingTheLine) {
  const struct {
    const char* file;
    const char* line;
  } cases[] = {
      {"far-timestamp-1.jsonl", "line 28:"},
      {"far-timestamp-2.csv", "line 212:"},
      {"far-timestamp-3.csv", "line 268:"},
      {"far-timestamp-4.jsonl", "line 26:"},
      {"far-timestamp-5.csv", "line 317:"},
      {"far-timestamp-6.csv", "line 497:"},
  };
  for (const auto& c : cases) {
    const std::string path =
        std::string("tests/sim/testdata/hanging-traces/") + c.file;
    absl::StatusOr<Trace> t = LoadTrace(path, TraceFormat::kAuto, {});
    ASSERT_FALSE(t.ok()) << c.file;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.line))
        << t.status();
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("--max-span"));
    // An explicit --max-span admits the span: the rows are then data.
    ServeGenOptions admit;
    admit.checks.max_span_s = 0;
    admit.checks.reject_isolated = false;
    EXPECT_TRUE(LoadTrace(path, TraceFormat::kAuto, admit).ok()) << c.file;
  }
}

std::vector<RowTime> Rows(std::initializer_list<double> times) {
  std::vector<RowTime> rows;
  int64_t line = 2;
  for (double t : times) {
    rows.push_back({t, line++});
  }
  return rows;
}

TEST(TraceTest, CheckSpanTable) {
  constexpr double kDay = 86400;
  const TraceChecks defaults;
  const TraceChecks admit_long{.max_span_s = 400 * kDay,
                               .reject_isolated = false};
  const struct {
    const char* name;
    std::vector<RowTime> rows;
    TraceChecks checks;
    const char* error;  // "" = accepted
  } cases[] = {
      {"an hour", Rows({0, 60, 1800, 3600}), defaults, ""},
      {"one row", Rows({5}), defaults, ""},
      {"eleven days, evenly", Rows({0, kDay, 3 * kDay, 7 * kDay, 11 * kDay}),
       defaults, ""},
      {"a late row", Rows({0, 10, 20, 30, 40, 2 * kDay}), defaults,
       "line 7: its time lies 48.0 h after the other 5 rows (which span "
       "40 s)"},
      {"an early row, out of order", Rows({1000, 1010, -3 * 365 * kDay, 1020}),
       defaults, "line 4: its time lies 3 years before the other 3 rows"},
      {"two late rows", Rows({0, 10, 20, 30, 40, 50, 9e9, 9e9 + 1}), defaults,
       ", as does line(s) 9;"},
      {"a gap of a day among many rows on both sides",
       Rows({0, 10, 20, 30, 2 * kDay, 2 * kDay + 10, 2 * kDay + 20,
             2 * kDay + 30}),
       defaults, ""},
      {"a gap under a day", Rows({0, 10, 20, 30, 40, 80000}), defaults, ""},
      {"longer than --max-span", Rows({0, 20 * kDay, 40 * kDay}), defaults,
       "the rows span 40.0 days, more than --max-span 31.0 days; the farthest "
       "from the middle is line 4"},
      {"admitted by --max-span", Rows({0, 10, 20, 300 * kDay}), admit_long, ""},
      {"still bounded by it", Rows({0, 10, 20, 500 * kDay}), admit_long,
       "more than --max-span"},
  };
  for (const auto& c : cases) {
    const absl::Status s = CheckSpan(c.rows, c.checks);
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(s.ok()) << c.name << ": " << s;
    } else {
      EXPECT_THAT(std::string(s.message()), HasSubstr(c.error)) << c.name;
    }
  }
}

TEST(TraceTest, NonFiniteNumbersAreBadRows) {
  absl::StatusOr<Trace> t = ParseCsv(
      "timestamp,endpoint,input_tokens,output_tokens,service_seconds\n"
      "0,a,10,10\n"
      "inf,a,10,10\n"
      "nan,a,10,10\n"
      "1,a,10,10,inf\n"
      "1,a,10,10,1e300\n"  // found by the fuzzer: a float cast to inf
      "2,a,10,10,1.5\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->stored_requests(), 2);
  EXPECT_EQ(t->bad.count, 4);
  EXPECT_DOUBLE_EQ(t->duration_s, 2);
}

// Found by the trace fuzzer: a token count beyond uint32 was cast anyway.
TEST(TraceTest, MooncakeTokenCountsBeyondUint32AreBadRows) {
  absl::StatusOr<Trace> t = ParseMooncake(
      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n"
      "{\"timestamp\": 1, \"input_length\": 7.7e17, \"output_length\": 5}\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->stored_requests(), 1);
  ASSERT_EQ(t->bad.count, 1);
  EXPECT_THAT(t->bad.examples[0], HasSubstr("line 2"));
}

TEST(TraceTest, ServeGenRefusesAbsurdRatesAndSpans) {
  BadRows bad;
  absl::StatusOr<RateClient> c =
      ParseRateClient("chunk-1-trace.csv",
                      "0,2.0,1.0,Gamma,1.0,0.5\n600,1e30,1.0,Gamma,1.0,0.5\n"
                      "1200,1.0,1.0,Gamma,1.0,0.5\n",
                      &bad);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->windows.size(), 2u);
  ASSERT_EQ(bad.count, 1);
  EXPECT_THAT(bad.examples[0], HasSubstr("line 2"));

  // A window start 10^6 times too late refuses the whole trace.
  const std::string tgz = TempPath("servegen-far.tar.gz");
  WriteGzip(tgz, Tar({{"m/chunk-0-trace.csv",
                       "0,1.0,1.0,Gamma,1.0,1.0\n600,1.0,1.0,Gamma,1.0,1.0\n"
                       "1200,1.0,1.0,Gamma,1.0,1.0\n1800000000,1.0,1.0,Gamma,"
                       "1.0,1.0\n"}}));
  absl::StatusOr<Trace> t = LoadTrace(tgz, TraceFormat::kAuto, {});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("chunk-0-trace.csv: line 4:"));
}

TEST(TraceTest, LoadGzipAndRefuseNonTraces) {
  const std::string gz = TempPath("azure.csv.gz");
  WriteGzip(gz,
            "TIMESTAMP,ContextTokens,GeneratedTokens\n"
            "2023-11-16 18:17:03.9799600,4808,10\n"
            "2023-11-16 18:17:04.9799600,10,10\n");
  absl::StatusOr<Trace> t = LoadTrace(gz, TraceFormat::kAuto, {});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kAzure);
  EXPECT_EQ(t->stored_requests(), 2);

  const std::string junk = TempPath("notes.txt");
  WriteFile(junk, "dear diary\nnothing here\n");
  absl::StatusOr<Trace> bad = LoadTrace(junk, TraceFormat::kAuto, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("is not a trace"));

  absl::StatusOr<Trace> missing =
      LoadTrace(TempPath("nope.csv"), TraceFormat::kAuto, {});
  EXPECT_FALSE(missing.ok());

  const std::string broken = TempPath("broken.gz");
  WriteFile(broken, std::string("\x1f\x8b\x08\x00garbage", 12));
  EXPECT_FALSE(LoadTrace(broken, TraceFormat::kAuto, {}).ok());
}

// ServeGen: a tar.gz of client rate files, sampled per window at the
// window's rate, deterministic for a seed, idle windows silent.
TEST(TraceTest, ServeGenTarSampledAtTheWindowRate) {
  const std::string client0 =
      "0,2.0,1.0,Gamma,1.0,0.5\n"
      "600,0,0,,0,0\n"
      "1200,0.5,2.0,Weibull,0.6,0.1\n";
  const std::string client1 = "0,1.0,1.0,Gamma,1.0,1.0\n";
  const std::string tgz = TempPath("servegen.tar.gz");
  WriteGzip(tgz, Tar({{"data/language/m/chunk-1-trace.csv", client1},
                      {"data/language/m/chunk-0-trace.csv", client0}}));
  ServeGenOptions o;
  o.seed = 7;
  absl::StatusOr<Trace> t = LoadTrace(tgz, TraceFormat::kAuto, o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, TraceFormat::kServeGen);
  ASSERT_EQ(t->endpoints.size(), 2u);
  EXPECT_EQ(t->endpoints[0].name, "client-0");  // numeric order
  const EndpointTrace a = t->Endpoint(0);
  int first = 0, second = 0, third = 0;
  for (const Request& r : a.requests) {
    (r.arrival_s < 600 ? first : r.arrival_s < 1200 ? second : third)++;
  }
  EXPECT_NEAR(first, 1200, 150);  // 2/s x 600 s
  EXPECT_EQ(second, 0);           // idle window
  EXPECT_NEAR(third, 300, 120);   // 0.5/s, bursty
  // Same seed, same arrivals; window restriction rebases the times.
  EXPECT_EQ(t->Endpoint(0).requests.size(), a.requests.size());
  o.start_s = 1200;
  o.duration_s = 600;
  o.max_endpoints = 1;
  absl::StatusOr<Trace> w = LoadTrace(tgz, TraceFormat::kAuto, o);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->endpoints.size(), 1u);
  EXPECT_EQ(static_cast<int>(w->Endpoint(0).requests.size()), third);
}

}  // namespace
}  // namespace pilotlight::sim
