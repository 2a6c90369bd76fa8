#include "controller/activator/proxy.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/policy/activation.h"
#include "controller/process/log.h"
#include "nlohmann/json.hpp"

namespace pilotlight::activator {
namespace {

// A client's retry of a request it sent before: the OpenAI and Anthropic
// SDKs (Stainless-made, every language) number their tries in
// X-Stainless-Retry-Count, 0 for the first.
bool ClientRetry(const httplib::Request& req) {
  int n = 0;
  return absl::SimpleAtoi(req.get_header_value("X-Stainless-Retry-Count"),
                          &n) &&
         n > 0;
}

// A request waiting for its pod (held, or sent and not answered): a
// client that hangs up ends it -- out of the hold at once, its pod's
// request cancelled.
struct Waiting {
  std::atomic<bool> gone{false};
  std::mutex mu;
  std::shared_ptr<http::Forward> forward;  // the pod's request, once sent
};

// Watches the request's client (its socket, else its address) while it
// waits; nothing without a watch.
std::unique_ptr<http::ClientWatch::Registration> WatchClient(
    http::ClientWatch* watch, const httplib::Request& req, int client_socket,
    Router& router, const std::string& endpoint,
    const std::shared_ptr<Waiting>& waiting) {
  if (watch == nullptr) {
    return nullptr;
  }
  auto gone = [waiting, &router, endpoint] {
    waiting->gone = true;
    router.Wake(endpoint);
    const std::lock_guard<std::mutex> lock(waiting->mu);
    if (waiting->forward != nullptr) {
      waiting->forward->Cancel();
    }
  };
  return client_socket >= 0
             ? watch->WatchSocket(client_socket, std::move(gone))
             : watch->Watch({req.remote_addr, req.remote_port, req.local_port},
                            std::move(gone));
}

// How the forward reached its pod: a new connection, a kept one, or a kept
// one the pod had closed.
prometheus::Counter& ConnectionCounter(Metrics& metrics,
                                       const http::Forward& f) {
  return f.stale()    ? metrics.connections_stale
         : f.reused() ? metrics.connections_reused
                      : metrics.connections_new;
}

// Wakes of a pod's engine one request waits for, at most (a second: it
// was put to sleep again between its wake and the request sent again).
constexpr int kMaxWakes = 2;
// Wakes a request gives up for another target without it counting as one
// of its tries (a pool's engines refusing one after another).
constexpr int kMaxGiveWays = 4;

const char* WakeResult(const Waker::Outcome& o) {
  return o.result == Waker::Result::kWoken ? "woken"
         : o.elsewhere                     ? "gave_way"
                                           : "failed";
}

bool CopiedBack(const std::string& header) {
  const std::string h = absl::AsciiStrToLower(header);
  return h != "content-length" && h != "transfer-encoding" &&
         h != "connection" && h != "keep-alive" && h != "content-type";
}

}  // namespace

bool Proxy::SplitTarget(const std::string& target, std::string& endpoint,
                        std::string& rest) {
  // "/ns/name" then "/..." (or nothing).
  if (target.size() < 4 || target[0] != '/') {
    return false;
  }
  const size_t a = target.find('/', 1);
  if (a == std::string::npos || a == 1) {
    return false;
  }
  size_t b = target.find_first_of("/?", a + 1);
  if (b == a + 1) {
    return false;
  }
  if (b == std::string::npos) {
    b = target.size();
  }
  endpoint = target.substr(1, b - 1);
  rest = target.substr(b);
  if (rest.empty() || rest[0] == '?') {
    rest = "/" + rest;
  }
  return endpoint.find('?') == std::string::npos;
}

void Proxy::Install(httplib::Server& server) {
  const auto handler = [this](const httplib::Request& req,
                              httplib::Response& res) { Handle(req, res); };
  server.Get(".*", handler);
  server.Post(".*", handler);
  server.Put(".*", handler);
  server.Delete(".*", handler);
}

void Proxy::Refuse(httplib::Response& res, const std::string& endpoint,
                   int code, const std::string& reason,
                   const std::string& message, int retry_after_s) {
  res.status = code;
  if (retry_after_s > 0) {
    res.set_header("Retry-After", std::to_string(retry_after_s));
  }
  // The OpenAI error shape, so clients print the message.
  const nlohmann::json body = {
      {"error", {{"message", message}, {"type", reason}, {"code", code}}}};
  // The message may quote the request's path: any bytes at all.
  res.set_content(
      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
          "\n",
      "application/json");
  if (!reason.empty()) {
    metrics_.rejections.Add({{"reason", reason}}).Increment();
  }
  metrics_.requests
      .Add({{"endpoint", endpoint}, {"code", std::to_string(code)}})
      .Increment();
}

// Why no lease, as the client's answer.
void Proxy::RefuseLease(httplib::Response& res, const std::string& endpoint,
                        const absl::Status& why, absl::Duration activation) {
  const std::string msg(why.message());
  switch (why.code()) {
    case absl::StatusCode::kNotFound:
      Refuse(res, endpoint, 404, "unknown_endpoint", msg);
      return;
    case absl::StatusCode::kResourceExhausted:
      Refuse(res, endpoint, 429, "queue_full", msg,
             policy::kRetryAfterHoldFullS);
      return;
    case absl::StatusCode::kCancelled:
      Abandoned(res, endpoint, "held");
      return;
    case absl::StatusCode::kDeadlineExceeded:
      Refuse(res, endpoint, 503, "activation_timeout",
             absl::StrCat(msg, " (activation timeout ",
                          absl::FormatDuration(activation), ")"),
             policy::kRetryAfterActivationTimeoutS);
      return;
    default:
      Refuse(res, endpoint, 503, "shutting_down", msg, 1);
      return;
  }
}

void Proxy::Abandoned(httplib::Response& res, const std::string& endpoint,
                      const char* stage) {
  res.status = 499;
  metrics_.abandoned.Add({{"stage", stage}}).Increment();
  metrics_.requests.Add({{"endpoint", endpoint}, {"code", "499"}}).Increment();
}

// The pod's status and headers now, its body as it comes; the lease is
// given back when the response ends.
void Proxy::StreamBack(httplib::Response& res, const std::string& endpoint,
                       const std::shared_ptr<http::Forward>& f,
                       std::shared_ptr<Lease> lease, bool cold,
                       absl::Duration held) {
  res.status = f->status();
  // What the activator did to this request, for a client (or the replay
  // tool) to tell a cold start from a slow answer.
  res.set_header(kColdStartHeader, cold ? "true" : "false");
  res.set_header(kHeldHeader, absl::StrCat(absl::ToInt64Milliseconds(held)));
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : f->headers()) {
    if (absl::AsciiStrToLower(name) == "content-type") {
      content_type = value;
    } else if (CopiedBack(name)) {
      res.headers.emplace(name, value);
    }
  }
  if (absl::StartsWith(content_type, "text/event-stream")) {
    res.set_header("Cache-Control", "no-cache");
  }
  metrics_.requests
      .Add({{"endpoint", endpoint}, {"code", std::to_string(f->status())}})
      .Increment();
  res.set_chunked_content_provider(
      content_type,
      [f, this, endpoint](size_t, httplib::DataSink& sink) {
        const bool more = f->Pump(sink);
        if (!more && !sink.is_writable()) {
          metrics_.upstream_errors.Add({{"reason", "client_gone"}}).Increment();
        } else if (!more) {
          // The pod's answer broke off after it began: the client's
          // connection is cut (no status can be sent any more). Logged,
          // so a client's "connection closed" can be traced to its pod.
          metrics_.upstream_errors.Add({{"reason", "mid_stream"}}).Increment();
          process::LogJson("warn", "pod's answer broke off mid-stream",
                           {{"endpoint", endpoint},
                            {"pod", f->address()},
                            {"error", f->error()},
                            {"after_ms", absl::ToInt64Milliseconds(
                                             absl::Now() - f->started())}});
        }
        return more;
      },
      [f, lease = std::move(lease)](bool) { f->Cancel(); });
}

void Proxy::TooLarge(const httplib::Request& req, uint64_t bytes,
                     httplib::Response& res) {
  std::string endpoint;
  std::string rest;
  if (!SplitTarget(req.target, endpoint, rest)) {
    endpoint.clear();
  }
  Refuse(res, endpoint, 413, "too_large",
         absl::StrCat("request body of ", bytes,
                      " bytes is over the activator's limit of ",
                      options_.max_body_bytes));
}

void Proxy::Handle(const httplib::Request& req, httplib::Response& res,
                   int client_socket) {
  std::string endpoint;
  std::string rest;
  if (!SplitTarget(req.target, endpoint, rest)) {
    Refuse(res, "", 404, "unknown_endpoint",
           absl::StrCat("no endpoint in ", req.path,
                        ": send requests to /<namespace>/<name>/v1/..., where "
                        "<namespace>/<name> is an InferenceAutoscaler"));
    return;
  }
  if (req.body.size() > options_.max_body_bytes) {
    TooLarge(req, req.body.size(), res);
    return;
  }
  const EndpointTimeouts t = timeouts_(endpoint);
  const absl::Time deadline = absl::Now() + t.activation;
  // A client's retry is served like any request, but its first try was
  // counted in the demand already (a full hold's 429 and a 503 are retried
  // by the SDKs: counted again, a burst at zero looked up to 3x its size).
  const bool client_retry = ClientRetry(req);
  if (client_retry) {
    metrics_.client_retries.Add({{"endpoint", endpoint}}).Increment();
  }
  const auto waiting = std::make_shared<Waiting>();
  const std::unique_ptr<http::ClientWatch::Registration> watched =
      WatchClient(watch_, req, client_socket, router_, endpoint, waiting);
  std::string last_error;
  bool cold = false;
  absl::Duration held_for;
  // Wakes that gave way to another target are no pod's failure: they do
  // not count as tries, up to kMaxGiveWays.
  int gave_way = 0;
  for (int attempt = 0; attempt < options_.max_attempts + gave_way; ++attempt) {
    absl::StatusOr<Lease> lease =
        router_.Acquire(endpoint, static_cast<int64_t>(req.body.size()),
                        deadline, &waiting->gone,
                        /*arrival=*/attempt == 0 && !client_retry);
    if (!lease.ok()) {
      RefuseLease(res, endpoint, lease.status(), t.activation);
      return;
    }
    if (lease->held() > absl::ZeroDuration()) {
      metrics_.HoldOf(endpoint).Observe(absl::ToDoubleSeconds(lease->held()));
    }
    held_for += lease->held();
    if (lease->cold() && attempt == 0) {
      metrics_.cold_starts.Add({{"endpoint", endpoint}}).Increment();
      cold = true;
    }
    auto held = std::make_shared<Lease>(*std::move(lease));
    const std::string pod = held->address();
    std::shared_ptr<http::Forward> f;
    std::string pod_gone;    // why, when its pod went while waking the engine
    bool elsewhere = false;  // the engine's wake gave way to other targets
    http::Forward::Start start = http::Forward::Start::kFailed;
    // Sent again after a wake of the pod's engine (once more if it was put
    // to sleep again meanwhile).
    for (int wake = 0; wake <= kMaxWakes; ++wake) {
      f = std::make_shared<http::Forward>(req, rest, pod, t.forward, &pool_);
      {
        const std::lock_guard<std::mutex> lock(waiting->mu);
        waiting->forward = f;
      }
      start =
          waiting->gone ? http::Forward::Start::kFailed : f->WaitForResponse();
      if (waiting->gone || waker_ == nullptr ||
          start != http::Forward::Start::kResponded || f->status() != 503 ||
          wake == kMaxWakes) {
        break;
      }
      const absl::Time asked = absl::Now();
      const Waker::Outcome woke = waker_->WakeIfAsleep(
          pod, f->started(), deadline, &waiting->gone,
          {.still_wanted =
               [this, &endpoint, &pod] {
                 return router_.KeepsWaitingOn(endpoint, pod);
               },
           .refused = [this, &endpoint,
                       &pod] { router_.WakeRefused(endpoint, pod); }});
      if (woke.result == Waker::Result::kNotAsleep) {
        break;  // the engine's own 503
      }
      f->Cancel();
      held_for += absl::Now() - asked;
      if (woke.sent) {
        metrics_.wakes
            .Add({{"endpoint", endpoint}, {"result", WakeResult(woke)}})
            .Increment();
        if (!woke.put_to_sleep.empty()) {
          metrics_.room_sleeps.Add({{"endpoint", endpoint}}).Increment();
        }
        // The controller hears of a wake as of a request held at zero.
        router_.PokeNow(endpoint);
      }
      if (waiting->gone) {
        break;
      }
      if (woke.result == Waker::Result::kFailed && woke.unreachable) {
        pod_gone = woke.error;
        break;
      }
      if (woke.result == Waker::Result::kFailed && woke.elsewhere) {
        elsewhere = true;
        break;
      }
      if (woke.result == Waker::Result::kFailed) {
        Refuse(res, endpoint, 503, "wake_failed",
               absl::StrCat("the engine of ", endpoint, " on ", pod,
                            " is asleep and did not wake: ", woke.error),
               policy::kRetryAfterActivationTimeoutS);
        return;
      }
    }
    if (waiting->gone) {
      // Whatever the pod did, it was cancelled for the client (and is not
      // to be taken out for refusing).
      Abandoned(res, endpoint, "sent");
      return;
    }
    if (elsewhere) {
      // A replica of the endpoint's own took over from its engine in the
      // pool while the wake waited for room, or the wake was refused and
      // another target of the endpoint's is not: held again for those.
      last_error = absl::StrCat(pod, ": its engine was not woken");
      gave_way = std::min(gave_way + 1, kMaxGiveWays);
      continue;
    }
    if (pod_gone.empty()) {
      ConnectionCounter(metrics_, *f).Increment();
    }
    if (!pod_gone.empty() || start == http::Forward::Start::kConnectFailed) {
      // Nothing was answered (or its pod went while waking the engine):
      // take the pod out, try the next one.
      last_error =
          absl::StrCat(pod, ": ", pod_gone.empty() ? f->error() : pod_gone);
      metrics_.upstream_errors.Add({{"reason", "connect"}}).Increment();
      router_.Remove(endpoint, pod);
      pool_.Forget(pod);
      metrics_.retries.Increment();
      continue;
    }
    Answer(res, endpoint, start, f, held, cold, held_for);
    return;
  }
  Refuse(res, endpoint, 502, "",
         absl::StrCat("no pod of ", endpoint, " took the connection after ",
                      options_.max_attempts, " tries; last: ", last_error));
}

void Proxy::Answer(httplib::Response& res, const std::string& endpoint,
                   http::Forward::Start start,
                   const std::shared_ptr<http::Forward>& f,
                   std::shared_ptr<Lease> lease, bool cold,
                   absl::Duration held) {
  switch (start) {
    case http::Forward::Start::kResponded:
      StreamBack(res, endpoint, f, std::move(lease), cold, held);
      return;
    case http::Forward::Start::kConnectFailed:  // retried by Handle
    case http::Forward::Start::kFailed:
      metrics_.upstream_errors.Add({{"reason", "broken"}}).Increment();
      Refuse(
          res, endpoint, 502, "",
          absl::StrCat("pod ", lease->address(),
                       " broke the connection before answering: ", f->error()));
      return;
    case http::Forward::Start::kTimedOut:
      metrics_.upstream_errors.Add({{"reason", "response_timeout"}})
          .Increment();
      Refuse(res, endpoint, 504, "",
             absl::StrCat("pod ", lease->address(), ": ", f->error()));
      return;
  }
}

}  // namespace pilotlight::activator
