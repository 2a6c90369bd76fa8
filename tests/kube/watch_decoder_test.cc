#include <string>
#include <vector>

#include "controller/kube/informer.h"
#include "controller/kube/kube_client.h"
#include "gtest/gtest.h"

namespace pilotlight::kube {
namespace {

// Events split across chunks at every possible boundary decode the same.
TEST(WatchDecoderTest, AnyChunking) {
  const std::string stream =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})"
      "\n"
      R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})"
      "\n\n"
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
      "\n";
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    WatchDecoder d;
    std::vector<std::string> seen;
    const auto on = [&](WatchEvent e) {
      seen.push_back(
          e.type + "@" +
          e.object["metadata"]["resourceVersion"].get<std::string>());
      return true;
    };
    ASSERT_TRUE(d.Feed(stream.substr(0, cut), on).ok());
    ASSERT_TRUE(d.Feed(stream.substr(cut), on).ok());
    EXPECT_EQ(seen,
              (std::vector<std::string>{"ADDED@1", "MODIFIED@2", "BOOKMARK@7"}))
        << "cut at " << cut;
  }
}

// A line that is not an event is an error; the callback can stop early.
TEST(WatchDecoderTest, GarbageAndStop) {
  WatchDecoder d;
  const auto on = [](WatchEvent) { return true; };
  EXPECT_FALSE(d.Feed("<html>oops</html>\n", on).ok());
  WatchDecoder stop;
  int n = 0;
  absl::StatusOr<bool> r = stop.Feed(
      "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"ADDED\",\"object\":{}}"
      "\n",
      [&](WatchEvent) { return ++n < 1; });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(n, 1);
}

// API answers map to codes callers act on: 409 conflict -> retry, 410 gone
// (watch resourceVersion too old) -> relist, 5xx -> back off.
// Found by the watch fuzzer: a name that is not a string threw out of the
// informer's thread. Wrongly typed fields now read as missing.
TEST(ObjectKeyTest, WrongTypesReadAsMissing) {
  EXPECT_EQ(ObjectKey(nlohmann::json::parse(
                R"({"metadata":{"name":"a","namespace":"ml"}})")),
            "ml/a");
  EXPECT_EQ(ObjectKey(nlohmann::json::parse(R"({"metadata":{"name":"n"}})")),
            "n");
  EXPECT_EQ(ObjectKey(nlohmann::json::parse(
                R"({"metadata":{"name":7,"namespace":["x"]}})")),
            "");
  EXPECT_EQ(ObjectKey(nlohmann::json::parse(R"({"metadata":"x"})")), "");
  EXPECT_EQ(ObjectKey(nlohmann::json::parse(R"("just a string")")), "");
}

TEST(KubeClientCodesTest, HttpStatusToCode) {
  struct Case {
    int http;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {400, absl::StatusCode::kInvalidArgument},
      {401, absl::StatusCode::kUnauthenticated},
      {403, absl::StatusCode::kPermissionDenied},
      {404, absl::StatusCode::kNotFound},
      {409, absl::StatusCode::kAborted},
      {410, absl::StatusCode::kOutOfRange},
      {422, absl::StatusCode::kInvalidArgument},
      {429, absl::StatusCode::kResourceExhausted},
      {500, absl::StatusCode::kUnavailable},
      {503, absl::StatusCode::kUnavailable},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CodeForHttpStatus(c.http), c.code) << c.http;
  }
}

}  // namespace
}  // namespace pilotlight::kube
