// KubeClient: HTTPS to the Kubernetes API server with cpp-httplib and
// OpenSSL -- client certificates, bearer tokens (a token file is re-read on
// every request, so a rotated service-account token is picked up), the
// cluster CA. Request() returns the status and body; API errors (the
// Status object the server sends) become absl errors naming the code and
// the server's message. Watch() streams a watch and hands each event to a
// callback. Thread-safety: one request at a time per client; use one client
// per thread.
//
// Example:
//   auto client = KubeClient::Create(*KubeConfigFromFile(path));
//   auto r = (*client)->Request("GET", "/api/v1/namespaces", "");
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/kube/kube_config.h"
#include "controller/kube/throttle.h"
#include "nlohmann/json.hpp"

namespace httplib {
class SSLClient;
}

namespace pilotlight::kube {

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;
};

// Splits a watch stream (JSON objects, one per line, arriving in chunks of
// any size) into events. Pure; unit-tested on awkward chunk boundaries.
class WatchDecoder {
 public:
  // Feeds a chunk; calls `on_event` for each complete line. Returns an
  // error for a line that is not a watch event; stops early (false) when
  // `on_event` returns false.
  absl::StatusOr<bool> Feed(absl::string_view chunk,
                            const std::function<bool(WatchEvent)>& on_event);

 private:
  std::string pending_;
};

class KubeClient {
 public:
  static absl::StatusOr<std::unique_ptr<KubeClient>> Create(
      const KubeConfig& config);
  ~KubeClient();

  struct Response {
    int status = 0;
    std::string body;
  };

  // `method`: GET, POST, PUT, PATCH, DELETE. `content_type` for bodies,
  // e.g. application/merge-patch+json. A non-2xx answer is an error whose
  // code follows the HTTP status (404 NotFound, 409 AlreadyExists/Aborted
  // for conflicts, 410 for an expired resourceVersion: OutOfRange, 403
  // PermissionDenied, 422/400 InvalidArgument, 5xx Unavailable) and whose
  // message carries the server's.
  absl::StatusOr<Response> Request(
      absl::string_view method, absl::string_view path, absl::string_view body,
      absl::string_view content_type = "application/json");

  // Streams GET `path` (which should carry watch=true) until the server
  // closes it, `on_event` returns false, or an error. An ERROR event whose
  // code is 410 (resourceVersion too old) is returned as OutOfRange so the
  // caller relists.
  absl::Status Watch(absl::string_view path,
                     const std::function<bool(WatchEvent)>& on_event);

  // Every request first takes a token from `throttle` (shared by all of a
  // controller's clients; not owned). A 429 answer is retried after its
  // Retry-After (at most 10 s, three times).
  void set_throttle(Throttle* throttle) { throttle_ = throttle; }

  // Aborts the request or watch in progress (from another thread): it
  // returns Cancelled/Unavailable at once.
  void Cancel();

  int64_t requests() const { return requests_; }  // sent, since creation
  // Requests sent by every client of this process, since it started.
  static int64_t TotalRequests();

 private:
  explicit KubeClient(KubeConfig config);
  absl::Status Connect();
  absl::Status Authorize();

  KubeConfig config_;
  std::string host_;
  int port_ = 443;
  std::unique_ptr<httplib::SSLClient> http_;
  Throttle* throttle_ = nullptr;
  std::atomic<int64_t> requests_{0};
};

// The absl code for an HTTP status from the API server.
absl::StatusCode CodeForHttpStatus(int status);

}  // namespace pilotlight::kube
