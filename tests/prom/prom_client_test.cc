#include "controller/prom/prom_client.h"

#include <httplib.h>

#include <thread>

#include "controller/prom/demand.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_prometheus.h"

namespace pilotlight::prom {
namespace {

using ::testing::HasSubstr;

TEST(ParseInstantAnswerTest, VectorWithLabelsAndValues) {
  absl::StatusOr<std::vector<Sample>> v = ParseInstantAnswer(200, R"({
    "status": "success", "data": {"resultType": "vector", "result": [
      {"metric": {"namespace": "ml", "pod": "a"}, "value": [1700000000.5, "3"]},
      {"metric": {"namespace": "ml", "pod": "b"}, "value": [1700000000.5, "NaN"]},
      {"metric": {"namespace": "ml", "pod": "c"}, "value": [1700000000.5, "+Inf"]},
      {"metric": {"namespace": "ml", "pod": "d"}, "histogram": [1, {}]}]}})");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), 1U);  // NaN, Inf and a native histogram say nothing
  EXPECT_EQ((*v)[0].labels.at("pod"), "a");
  EXPECT_DOUBLE_EQ((*v)[0].value, 3);
  EXPECT_EQ((*v)[0].at, absl::FromUnixMillis(1700000000500));
}

TEST(ParseInstantAnswerTest, EmptyResultIsEmptyNotAnError) {
  absl::StatusOr<std::vector<Sample>> v = ParseInstantAnswer(
      200,
      R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->empty());
}

TEST(ParseInstantAnswerTest, ErrorsSayWhich) {
  struct Case {
    int http;
    const char* body;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {400,
       R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})",
       absl::StatusCode::kInvalidArgument, "parse error at char 5"},
      {503,
       R"({"status":"error","errorType":"timeout","error":"query timed out"})",
       absl::StatusCode::kUnavailable, "timeout"},
      {422,
       R"({"status":"error","errorType":"execution","error":"many-to-many"})",
       absl::StatusCode::kInternal, "many-to-many"},
      {502, "<html>Bad Gateway</html>", absl::StatusCode::kDataLoss,
       "HTTP 502 with something that is not its API's JSON: <html>"},
      {200,
       R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
       absl::StatusCode::kDataLoss, "want vector"},
      {200, R"({"status":"success"})", absl::StatusCode::kDataLoss,
       "no data.result"},
      {200, "", absl::StatusCode::kDataLoss, "not its API's JSON"},
      // Wrongly typed error fields (found by the fuzzer: they threw).
      {400, R"({"status":"error","errorType":5,"error":["x"]})",
       absl::StatusCode::kInternal, "Prometheus error (HTTP 400, ): "},
      // Binary garbage: the quoted head is made valid UTF-8, since the
      // message becomes a status condition (JSON).
      {200, "\x1f\x8b\x08\x00\xff\xfe gzip?", absl::StatusCode::kDataLoss,
       "JSON: \x1f\xEF\xBF\xBD\x08"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Sample>> v = ParseInstantAnswer(c.http, c.body);
    EXPECT_EQ(v.status().code(), c.code) << c.body;
    EXPECT_THAT(std::string(v.status().message()), HasSubstr(c.message))
        << c.body;
  }
}

TEST(ParseRangeAnswerTest, Matrix) {
  absl::StatusOr<std::vector<Series>> m = ParseRangeAnswer(200, R"({
    "status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"pod":"a"},"values":[[10,"1"],[11,"NaN"],[12,"2.5"]]}]}})");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 1U);
  ASSERT_EQ((*m)[0].points.size(), 2U);
  EXPECT_DOUBLE_EQ((*m)[0].points[1].second, 2.5);
}

TEST(PromClientTest, BadUrlIsRefused) {
  EXPECT_EQ(PromClient::Create("prometheus:9090").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PromClient::Create("http://").status().code(),
            absl::StatusCode::kInvalidArgument);
}

using fakes::FakePrometheus;

TEST(PromClientTest, GarbageAndSlowAnswersAreErrorsNotData) {
  FakePrometheus garbage(
      [](const std::string&, httplib::Response& res) {
        res.set_content("}{", "text/plain");
      },
      "/prefix");
  auto c = PromClient::Create(garbage.url());
  ASSERT_TRUE(c.ok());
  absl::StatusOr<std::vector<Sample>> v =
      (*c)->Query("sum by (namespace, pod) (vllm:num_requests_running)");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(garbage.last_query(),
            "sum by (namespace, pod) (vllm:num_requests_running)");

  FakePrometheus slow([](const std::string&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    res.set_content(
        R"({"status":"success","data":{"resultType":"vector","result":[]}})",
        "application/json");
  });
  auto s = PromClient::Create(slow.url(), absl::Milliseconds(300));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->Query("up").status().code(), absl::StatusCode::kUnavailable);
}

TEST(PromClientTest, UnreachableIsUnavailable) {
  // A port nothing listens on: bind one, then close it.
  int port = 0;
  {
    httplib::Server s;
    port = s.bind_to_any_port("127.0.0.1");
  }
  auto c = PromClient::Create("http://127.0.0.1:" + std::to_string(port),
                              absl::Milliseconds(500));
  ASSERT_TRUE(c.ok());
  absl::StatusOr<std::vector<Sample>> v = (*c)->Query("up");
  EXPECT_EQ(v.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("127.0.0.1"));
}

TEST(DemandReaderTest, SumsByPodAndKeepsErrorsPerQuery) {
  FakePrometheus prom([](const std::string& query, httplib::Response& res) {
    if (query == "bad") {
      res.status = 400;
      res.set_content(
          R"({"status":"error","errorType":"bad_data","error":"no"})",
          "application/json");
      return;
    }
    res.set_content(
        R"({"status":"success","data":{"resultType":"vector","result":[
      {"metric":{"namespace":"ml","pod":"a"},"value":[1,"2"]},
      {"metric":{"namespace":"ml","pod":"b"},"value":[1,"5"]},
      {"metric":{"job":"x"},"value":[1,"9"]}]}})",
        "application/json");
  });
  auto c = PromClient::Create(prom.url());
  ASSERT_TRUE(c.ok());
  DemandReader reader(**c);
  auto got = reader.Read({"good", "bad", ""}, absl::FromUnixSeconds(100));
  ASSERT_EQ(got.size(), 2U);  // the empty query is not sent
  ASSERT_TRUE(got.at("good").ok());
  EXPECT_EQ(*got.at("good"), (PodValues{{"ml/a", 2}, {"ml/b", 5}}));
  EXPECT_EQ(got.at("bad").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*c)->queries(), 2);
}

TEST(PresetQueriesTest, OneBatchedQueryPerSignal) {
  const DemandQueries v =
      PresetQueries(MetricsServer::kVllm, absl::Seconds(30));
  EXPECT_EQ(v.in_flight, "sum by (namespace, pod) (vllm:num_requests_running)");
  EXPECT_EQ(v.arrival_rate,
            "sum by (namespace, pod) (rate(vllm:request_success_total[30s]))");
  EXPECT_TRUE(PresetQueries(MetricsServer::kTriton, absl::Seconds(30))
                  .in_flight.empty());
  // Calibration: the inter-token histogram under either of vLLM's names.
  EXPECT_EQ(v.itl_count,
            "sum by (namespace, pod) "
            "(rate(vllm:inter_token_latency_seconds_count[30s]) or "
            "rate(vllm:time_per_output_token_seconds_count[30s]))");
  EXPECT_EQ(v.ttft_sum,
            "sum by (namespace, pod) "
            "(rate(vllm:time_to_first_token_seconds_sum[30s]))");
  EXPECT_TRUE(v.itl_tokens.empty());  // the count is of tokens
  // SGLang's histograms by their own names.
  const DemandQueries sg =
      PresetQueries(MetricsServer::kSglang, absl::Seconds(30));
  EXPECT_EQ(sg.itl_sum,
            "sum by (namespace, pod) "
            "(rate(sglang:inter_token_latency_seconds_sum[30s]))");
  EXPECT_EQ(sg.ttft_count,
            "sum by (namespace, pod) "
            "(rate(sglang:time_to_first_token_seconds_count[30s]))");
  EXPECT_EQ(sg.prompt_tokens,
            "sum by (namespace, pod) (rate(sglang:prompt_tokens_total[30s]))");
  // Its request counter, 0 for a pod that has counted nothing yet.
  EXPECT_EQ(sg.arrival_rate,
            "sum by (namespace, pod) (rate(sglang:num_requests_total[30s])) "
            "or sum by (namespace, pod) (0 * sglang:num_running_reqs)");
  // TGI's is of each request's mean: the tokens behind it are counted apart,
  // and it has no TTFT histogram.
  const DemandQueries tgi =
      PresetQueries(MetricsServer::kTgi, absl::Seconds(30));
  EXPECT_EQ(tgi.itl_count,
            "sum by (namespace, pod) "
            "(rate(tgi_request_mean_time_per_token_duration_count[30s]))");
  EXPECT_EQ(tgi.itl_tokens,
            "sum by (namespace, pod) "
            "(rate(tgi_request_generated_tokens_sum[30s]))");
  EXPECT_TRUE(tgi.ttft_sum.empty());
  EXPECT_TRUE(
      PresetQueries(MetricsServer::kTriton, absl::Seconds(30)).itl_sum.empty());
  EXPECT_EQ(*ParseMetricsServer("tgi"), MetricsServer::kTgi);
  EXPECT_FALSE(ParseMetricsServer("vLLM").ok());
}

}  // namespace
}  // namespace pilotlight::prom
