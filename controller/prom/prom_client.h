// PromClient: the Prometheus HTTP API (/api/v1/query, /api/v1/query_range)
// over cpp-httplib, with a timeout on every call. Every failure is an error
// that says which: the server unreachable (Unavailable), an HTTP or API
// error with Prometheus's errorType and message (InvalidArgument for
// bad_data, Unavailable for timeout/unavailable, Internal otherwise), or an
// answer that is not the documented shape (DataLoss, with its first bytes).
// A sample whose value is NaN or infinite is dropped: it says nothing.
//
// Thread-safety: one call at a time per client.
//
// Example:
//   auto prom = PromClient::Create("http://prometheus:9090");
//   auto v = (*prom)->Query("sum by (namespace, pod)
//   (vllm:num_requests_running)");
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace httplib {
class Client;
}

namespace pilotlight::prom {

using Labels = std::map<std::string, std::string, std::less<>>;

struct Sample {
  Labels labels;
  absl::Time at;
  double value = 0;
};

struct Series {
  Labels labels;
  std::vector<std::pair<absl::Time, double>> points;
};

// The `data` of an instant-query answer of resultType vector (or scalar,
// as one sample without labels). Pure.
absl::StatusOr<std::vector<Sample>> ParseInstantAnswer(int http_status,
                                                       absl::string_view body);
// The `data` of a range-query answer (resultType matrix). Pure.
absl::StatusOr<std::vector<Series>> ParseRangeAnswer(int http_status,
                                                     absl::string_view body);

class PromClient {
 public:
  // `url`: http://host:port (an optional path prefix is kept).
  static absl::StatusOr<std::unique_ptr<PromClient>> Create(
      const std::string& url, absl::Duration timeout = absl::Seconds(5));
  ~PromClient();

  absl::StatusOr<std::vector<Sample>> Query(
      absl::string_view promql, std::optional<absl::Time> at = std::nullopt);
  absl::StatusOr<std::vector<Series>> QueryRange(absl::string_view promql,
                                                 absl::Time start,
                                                 absl::Time end,
                                                 absl::Duration step);

  const std::string& url() const { return url_; }
  int64_t queries() const { return queries_; }  // since creation

 private:
  PromClient(std::string url, std::string prefix, absl::Duration timeout);
  absl::StatusOr<std::pair<int, std::string>> Post(const std::string& path,
                                                   const std::string& form);

  std::string url_;
  std::string prefix_;
  absl::Duration timeout_;
  std::unique_ptr<httplib::Client> http_;
  int64_t queries_ = 0;
};

}  // namespace pilotlight::prom
