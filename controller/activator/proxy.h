// Proxy: the activator's OpenAI-compatible front. A request for
//
//   /<namespace>/<name>/<rest>        e.g. /ml/llama/v1/chat/completions
//
// goes to InferenceAutoscaler <namespace>/<name>: a lease on one of its
// pods from the Router (held while none is free -- at zero, until the
// controller's scale-up is Ready and answering), then sent on as
// /<rest> (query kept) and streamed back unbuffered (Forward). Answers it
// makes itself:
//
//   404  no such endpoint, or a path without /<namespace>/<name>/
//   413  body over the limit
//   429  the hold is full (Retry-After)
//   503  no replica within the activation timeout (Retry-After), or the
//        activator is stopping
//   502  every pod tried refused the connection, or one broke before
//        answering
//   504  a pod took the request but sent nothing within the
//        response-start timeout
//   499  (nginx's "client closed request"; nobody reads it) the client
//        hung up while its request was held or a pod had not answered:
//        with a http::ClientWatch, noticed within a pass -- the request leaves
//        the hold (and the demand), and a pod's request is cancelled
//
// A pod that refuses or resets the connection before any byte is answered
// is taken out and the request tried on another (up to 3 pods); once a
// byte went to the client it never is. The timeouts come per endpoint from
// `Timeouts` (the activation wait from its predicted cold start).
//
// A pod whose engine sleeps (vLLM's sleep mode) answers 503: with a Waker
// (WakeEngines), the proxy wakes it (waker.h) and sends the request again
// on the same lease, the wake counted in the hold. A wake refused is asked
// again; once the endpoint's targets no longer name the pod (a replica of
// its own took over), the request is held again for them. One still
// refused at the activation timeout is answered 503 with Retry-After and
// what the pod said ("wake_failed").
//
// A response from a pod carries two headers of the activator's own:
// X-Pilotlight-Cold-Start (true when the request waited for a replica that
// was not ready when it arrived: the cold-start request the metric counts)
// and X-Pilotlight-Held-Ms (how long it was held for a pod).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "controller/activator/metrics.h"
#include "controller/activator/router.h"
#include "controller/activator/waker.h"
#include "controller/http/client_watch.h"
#include "controller/http/forward.h"
#include "controller/http/upstream_pool.h"
#include "httplib.h"

namespace pilotlight::activator {

struct EndpointTimeouts {
  absl::Duration activation = absl::Minutes(5);
  http::ForwardTimeouts forward;
};

struct ProxyOptions {
  size_t max_body_bytes = size_t{16} << 20;
  int max_attempts = 3;
  // Idle connections to pods kept for the next request (upstream_pool.h).
  http::UpstreamPoolOptions upstream;
};

inline constexpr char kColdStartHeader[] = "X-Pilotlight-Cold-Start";
inline constexpr char kHeldHeader[] = "X-Pilotlight-Held-Ms";

class Proxy {
 public:
  using Timeouts = std::function<EndpointTimeouts(const std::string& endpoint)>;
  Proxy(ProxyOptions options, Router& router, Timeouts timeouts,
        Metrics& metrics)
      : options_(options),
        router_(router),
        timeouts_(std::move(timeouts)),
        metrics_(metrics),
        pool_(options.upstream) {}

  // Notice clients that hang up while their request waits (`watch` outlives
  // the proxy; without one, a client that went away is noticed when its
  // answer is written).
  void WatchClients(http::ClientWatch* watch) { watch_ = watch; }
  // Wake the engines of pods that answer 503 asleep (`waker` outlives the
  // proxy; without one, their 503 goes to the client).
  void WakeEngines(Waker* waker) { waker_ = waker; }
  // Routes every path of `server` to Handle.
  void Install(httplib::Server& server);
  // `client_socket`: the client's connection, when the server knows it
  // (the activator's own front; -1: matched by its addresses).
  void Handle(const httplib::Request& req, httplib::Response& res,
              int client_socket = -1);
  // The 413 for a body of `bytes`, over the limit (http::FrontServer's answer
  // to a body it does not read, and Handle's).
  void TooLarge(const httplib::Request& req, uint64_t bytes,
                httplib::Response& res);

  // "/ns/name/rest?q" -> {"ns/name", "/rest?q"}; false when the path has no
  // endpoint.
  static bool SplitTarget(const std::string& target, std::string& endpoint,
                          std::string& rest);

 private:
  void Refuse(httplib::Response& res, const std::string& endpoint, int code,
              const std::string& reason, const std::string& message,
              int retry_after_s = 0);
  void RefuseLease(httplib::Response& res, const std::string& endpoint,
                   const absl::Status& why, absl::Duration activation);
  // The client hung up at `stage` ("held", "sent").
  void Abandoned(httplib::Response& res, const std::string& endpoint,
                 const char* stage);
  void StreamBack(httplib::Response& res, const std::string& endpoint,
                  const std::shared_ptr<http::Forward>& f,
                  std::shared_ptr<Lease> lease, bool cold, absl::Duration held);
  // The pod's answer (`start`) to the client: its response streamed back,
  // or 502/504 saying what the pod did.
  void Answer(httplib::Response& res, const std::string& endpoint,
              http::Forward::Start start,
              const std::shared_ptr<http::Forward>& f,
              std::shared_ptr<Lease> lease, bool cold, absl::Duration held);

  const ProxyOptions options_;
  Router& router_;
  const Timeouts timeouts_;
  Metrics& metrics_;
  http::UpstreamPool pool_;
  http::ClientWatch* watch_ = nullptr;
  Waker* waker_ = nullptr;
};

}  // namespace pilotlight::activator
