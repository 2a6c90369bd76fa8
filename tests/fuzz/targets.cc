#include "tests/fuzz/targets.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "controller/activator/metrics.h"
#include "controller/activator/proxy.h"
#include "controller/activator/router.h"
#include "controller/api/demand_service.h"
#include "controller/api/resources.h"
#include "controller/base/utf8.h"
#include "controller/cluster/cluster_index.h"
#include "controller/http/chunked.h"
#include "controller/http/message_head.h"
#include "controller/kube/kube_client.h"
#include "controller/kube/kube_config.h"
#include "controller/model/catalog.h"
#include "controller/model/sizing.h"
#include "controller/model/tuning_file.h"
#include "controller/policy/decider.h"
#include "controller/prom/prom_client.h"
#include "controller/sim/load_trace.h"
#include "controller/sim/servegen.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"

namespace pilotlight::fuzz {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz target promise broken: %s\n", what);
    std::abort();
  }
}

namespace {

// The first byte picks a mode; the rest is the input.
unsigned char Mode(absl::string_view& data) {
  if (data.empty()) {
    return 0;
  }
  const auto m = static_cast<unsigned char>(data.front());
  data.remove_prefix(1);
  return m;
}

// --- Traces: detection, gunzip, tar, every format's reader, span checks.
void Trace(absl::string_view data) {
  static constexpr sim::TraceFormat kFormats[] = {
      sim::TraceFormat::kAuto,     sim::TraceFormat::kAzure,
      sim::TraceFormat::kMooncake, sim::TraceFormat::kAlibaba,
      sim::TraceFormat::kServeGen, sim::TraceFormat::kCsv};
  const unsigned char m = Mode(data);
  const sim::TraceFormat format = kFormats[m % 6];
  sim::ServeGenOptions window;
  if (m & 0x40) {
    window.start_s = 30;
    window.duration_s = 600;
    window.max_endpoints = 2;
  }
  absl::StatusOr<sim::Trace> t = sim::LoadTraceData(
      std::string(data), "chunk-7-trace.csv", format, window);
  if (!t.ok()) {
    return;
  }
  Check(std::isfinite(t->duration_s) && t->duration_s >= 0,
        "a trace's duration is finite and >= 0");
  if (t->generate) {
    return;  // rate traces: sampling is sized by the rates, not parsed
  }
  for (const sim::EndpointTrace& e : t->endpoints) {
    double last = 0;
    for (const sim::Request& r : e.requests) {
      Check(std::isfinite(r.arrival_s) && r.arrival_s >= 0,
            "arrivals are finite and >= 0");
      Check(r.arrival_s >= last, "an endpoint's arrivals are sorted");
      Check(r.arrival_s <= t->duration_s + 1e-6 * (1 + t->duration_s),
            "arrivals lie within the duration");
      Check(std::isfinite(r.service_s), "service times are finite");
      last = r.arrival_s;
    }
  }
}

// --- The model's YAML files: the GPU catalog, and a tuning file (size
// --tuning) from the same bytes.
void Catalog(absl::string_view data) {
  absl::StatusOr<model::Catalog> c = model::Catalog::FromYaml(data, "fuzz");
  if (c.ok()) {
    Check(!c->Names().empty(), "an accepted catalog names a class");
  }
  absl::StatusOr<model::EngineTuning> t = model::ParseTuning(data, "fuzz", {});
  if (t.ok()) {
    Check(model::ValidateTuning(*t).ok(), "an accepted tuning is in range");
    // What is written of it is read back to itself, written the same.
    const std::string text = model::FormatTuningFile(*t);
    absl::StatusOr<model::EngineTuning> back =
        model::ParseTuning(text, "fuzz", {});
    Check(back.ok() && model::FormatTuningFile(*back) == text,
          "a written tuning reads back to itself");
  }
}

// The GPUClass every fuzzed InferenceAutoscaler may name.
const std::map<std::string, api::GpuClassResource>& Classes() {
  static const auto* classes = [] {
    auto* m = new std::map<std::string, api::GpuClassResource>();
    const model::Catalog catalog = *model::Catalog::Default();
    const model::GpuClass* a100 = catalog.Find("a100-80gb");
    for (policy::CapacityType cap :
         {policy::CapacityType::kOnDemand, policy::CapacityType::kSpot}) {
      const nlohmann::json o = api::GpuClassObject(*a100, cap);
      absl::StatusOr<api::GpuClassResource> r = api::ParseGpuClass(o);
      Check(r.ok(), "the shipped GPUClass parses");
      (*m)[o["metadata"]["name"].get<std::string>()] = *r;
    }
    return m;
  }();
  return *classes;
}

// --- Custom resources as the API server returns them: GPUClass and
// InferenceAutoscaler; an accepted spec is then decided on once (the policy
// core must cope with anything the parser lets through).
void Resources(absl::string_view data) {
  const nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded()) {
    return;
  }
  (void)api::ParseGpuClass(j);
  absl::StatusOr<api::AutoscalerResource> ia =
      api::ParseInferenceAutoscaler(j, Classes());
  if (!ia.ok()) {
    Check(IsValidUtf8(ia.status().message()),
          "a spec error (a status condition) is valid UTF-8");
    return;
  }
  static const model::Catalog* catalog =
      new model::Catalog(*api::CatalogOf(Classes()));
  policy::Decider decider;
  policy::DemandSample d;
  d.at = absl::FromUnixSeconds(1'700'000'000);
  d.in_flight = 3;
  d.queued = 1;
  d.arrivals = 4;
  policy::Snapshot s;
  s.spec = &ia->spec;
  s.catalog = catalog;
  s.demand = {&d, 1};
  s.variants.resize(ia->spec.variants.size());
  const policy::Decision dec = decider.Decide(s, d.at);
  for (const policy::VariantDecision& v : dec.variants) {
    Check(v.replicas >= 0, "a decision asks for >= 0 replicas");
  }
}

// --- A watch stream in chunks of fuzzed size, its objects fed to the index
// the reconciler joins over.
void Watch(absl::string_view data) {
  const size_t chunk = 1 + Mode(data) % 64;
  kube::WatchDecoder decoder;
  cluster::ClusterIndex index;
  const absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  const auto on_event = [&](kube::WatchEvent e) {
    kube::EventType type = kube::EventType::kModified;
    if (e.type == "ADDED") {
      type = kube::EventType::kAdded;
    } else if (e.type == "DELETED") {
      type = kube::EventType::kDeleted;
    }
    const nlohmann::json& o = e.object;
    const std::string kind =
        o.is_object() && o.contains("kind") && o["kind"].is_string()
            ? o["kind"].get<std::string>()
            : "";
    if (kind == "Pod") {
      (void)index.OnPod(type, o, now);
      (void)index.NoticeFor(o);
    } else if (kind == "ReplicaSet") {
      (void)index.OnReplicaSet(type, o);
    } else if (kind == "Deployment") {
      for (const std::string& k : index.OnDeployment(type, o)) {
        (void)index.PodsOf(k);
      }
    } else if (kind == "Node") {
      (void)index.OnNode(type, o, now);
      (void)index.FreeGpus({{"pool", "gpu"}});
    } else {
      (void)index.OnAutoscaler(type, o);
    }
    return true;
  };
  while (!data.empty()) {
    const absl::string_view piece = data.substr(0, chunk);
    data.remove_prefix(piece.size());
    if (!decoder.Feed(piece, on_event).ok()) {
      return;  // a bad line ends the stream, as the informer relists
    }
  }
}

// --- Prometheus answers, instant and range, under any HTTP status.
void Prometheus(absl::string_view data) {
  static constexpr int kStatus[] = {200, 400, 422, 503, 500, 302};
  const unsigned char m = Mode(data);
  const int status = kStatus[m % 6];
  if (m & 0x80) {
    absl::StatusOr<std::vector<prom::Series>> r =
        prom::ParseRangeAnswer(status, data);
    Check(IsValidUtf8(r.status().message()), "an error message is valid UTF-8");
    if (r.ok()) {
      for (const prom::Series& s : *r) {
        for (const auto& [at, v] : s.points) {
          Check(std::isfinite(v), "range points are finite");
        }
      }
    }
    return;
  }
  absl::StatusOr<std::vector<prom::Sample>> r =
      prom::ParseInstantAnswer(status, data);
  // Errors go into status conditions, which are JSON.
  Check(IsValidUtf8(r.status().message()), "an error message is valid UTF-8");
  if (r.ok()) {
    for (const prom::Sample& s : *r) {
      Check(std::isfinite(s.value), "instant samples are finite");
    }
  }
}

// --- kubeconfig (relative paths resolve under a folder that does not
// exist).
void KubeConfig(absl::string_view data) {
  (void)kube::KubeConfigFromYaml(data, "/nonexistent-fuzz-dir");
}

// --- The activators' demand reports, as the gRPC server decodes them.
void DemandReport(absl::string_view data) {
  v1::DemandReport report;
  if (!report.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return;
  }
  absl::StatusOr<api::ActivatorReport> r = api::FromProto(report);
  if (!r.ok()) {
    return;
  }
  Check(!r->activator.empty(), "an accepted report names its activator");
  for (const auto& [name, a] : r->endpoints) {
    Check(a.arrivals_total >= 0 && a.in_flight >= 0 && a.held >= 0 &&
              a.held_bytes >= 0 && a.oldest_wait_seconds >= 0,
          "an accepted report's counts are >= 0");
  }
}

// --- The activator's request handling: the target, headers and body of a
// request for an endpoint with no replica (answered without a pod).
void ActivatorRequest(absl::string_view data) {
  struct Front {
    prometheus::Registry registry;
    activator::Metrics metrics{registry};
    activator::Router router{
        activator::HoldLimits{.max_held_per_endpoint = 2,
                              .max_held_bytes_per_endpoint = 4096,
                              .max_held_total = 4,
                              .max_held_bytes_total = 8192,
                              .unknown_endpoint_wait = absl::ZeroDuration()}};
    activator::Proxy proxy{
        activator::ProxyOptions{
            .max_body_bytes = 1024, .max_attempts = 3, .upstream = {}},
        router,
        [](const std::string&) {
          activator::EndpointTimeouts t;
          t.activation = absl::ZeroDuration();
          return t;
        },
        metrics};
    Front() { router.SetEndpoints({"ml/llama", "a/b"}); }
  };
  static Front* front = new Front();
  // Line 1: method and target; then headers up to an empty line; the rest
  // is the body.
  httplib::Request req;
  std::vector<absl::string_view> lines = absl::StrSplit(data, '\n');
  const std::vector<absl::string_view> first =
      absl::StrSplit(lines[0], absl::MaxSplits(' ', 1));
  req.method = std::string(first[0]);
  req.target = first.size() > 1 ? std::string(first[1]) : "/";
  req.path = req.target.substr(0, req.target.find('?'));
  size_t i = 1;
  for (; i < lines.size() && !lines[i].empty(); ++i) {
    const std::vector<absl::string_view> kv =
        absl::StrSplit(lines[i], absl::MaxSplits(':', 1));
    req.headers.emplace(std::string(kv[0]),
                        kv.size() > 1 ? std::string(kv[1]) : "");
  }
  if (i < lines.size()) {  // the body follows the empty line
    const size_t at = static_cast<size_t>(lines[i].data() - data.data()) + 1;
    req.body = std::string(data.substr(std::min(at, data.size())));
  }
  httplib::Response res;
  front->proxy.Handle(req, res);
  Check(IsValidUtf8(res.body), "the answer's JSON body is valid UTF-8");
  Check(res.status == 404 || res.status == 413 || res.status == 429 ||
            res.status == 503,
        "a request with no replica to go to is answered 404/413/429/503");
}

// --- The activator's HTTP/1.1 transport: a client's request head, a pod's
// response head, the chunked coding of either body.
void HttpRequestHead(absl::string_view data) {
  httplib::Request req;
  http::Framing framing = http::Framing::kNone;
  uint64_t length = 0;
  if (const std::optional<http::Refusal> refused =
          http::ParseRequestHead(data, req, framing, length)) {
    Check(refused->status == 400 || refused->status == 501,
          "a refused request head is answered 400 or 501");
    Check(!refused->message.empty(), "a refusal says why");
    return;
  }
  Check(!req.method.empty() && req.method.find(' ') == std::string::npos,
        "an accepted request has a method without spaces");
  Check(req.version == "HTTP/1.1" || req.version == "HTTP/1.0",
        "an accepted request is HTTP/1.x");
  Check(absl::StartsWith(req.target, req.path),
        "the path is the target up to its query");
  Check(framing == http::Framing::kChunked || framing == http::Framing::kLength,
        "a request body is chunked or has a length (0 without one)");
  if (framing == http::Framing::kLength && req.has_header("Content-Length")) {
    uint64_t n = 0;
    Check(absl::SimpleAtoi(req.get_header_value("Content-Length"), &n) &&
              n == length,
          "the length is the Content-Length given");
  }
}

void HttpResponseHead(absl::string_view data) {
  const bool head_request = (Mode(data) & 1) != 0;
  http::ResponseHead r;
  if (http::ParseResponseHead(data, head_request, r)) {
    return;
  }
  Check(r.status >= 100 && r.status <= 999, "a status is three digits");
  if (r.status < 200) {
    Check(r.headers.empty(), "an interim answer's headers are not kept");
    return;
  }
  if (head_request || r.status == 204 || r.status == 304) {
    Check(r.framing == http::Framing::kNone, "HEAD, 204 and 304 have no body");
  }
  // httplib's headers compare names without case.
  if (r.framing == http::Framing::kLength) {
    Check(r.headers.count("Content-Length") > 0,
          "a length comes from a Content-Length header");
  }
  const auto [first, last] = r.headers.equal_range("Connection");
  for (auto it = first; it != last; ++it) {
    for (const absl::string_view token : absl::StrSplit(it->second, ',')) {
      if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(token), "close")) {
        Check(!r.keep_alive, "Connection: close ends the connection");
      }
    }
  }
}

// The chunked coding decoded at once and in the pieces the first byte
// picks: the same body, the same verdict, never more bytes out than in.
void HttpChunked(absl::string_view data) {
  const size_t piece = 1 + Mode(data) % 16;
  const auto decode = [&](size_t step, std::string& out, bool& done) {
    http::ChunkedDecoder d;
    std::string pending;
    for (size_t at = 0; at < data.size() && !d.done(); at += step) {
      const absl::string_view more = data.substr(at, step);
      pending.append(more.data(), more.size());
      size_t used = 0;
      if (!d.Decode(pending, used, out)) {
        return false;
      }
      Check(used <= pending.size(), "the decoder uses no more than it has");
      pending.erase(0, used);
    }
    done = d.done();
    return true;
  };
  std::string whole, pieces;
  bool whole_done = false, pieces_done = false;
  const bool whole_ok = decode(data.size() + 1, whole, whole_done);
  const bool pieces_ok = decode(piece, pieces, pieces_done);
  Check(whole.size() <= data.size(), "a body is no longer than its coding");
  if (whole_ok && pieces_ok) {
    Check(whole_done == pieces_done,
          "pieces end the body where the whole does");
    Check(!whole_done || whole == pieces,
          "a body decoded in pieces is the body decoded at once");
  }
  if (whole_done) {
    Check(pieces_ok, "a coding accepted at once is accepted in pieces");
  }
}

}  // namespace

const std::vector<Target>& Targets() {
  static const std::vector<Target> kTargets = {
      {"trace", Trace},
      {"catalog", Catalog},
      {"resources", Resources},
      {"watch", Watch},
      {"prometheus", Prometheus},
      {"kubeconfig", KubeConfig},
      {"demand_report", DemandReport},
      {"activator_request", ActivatorRequest},
      {"http_request_head", HttpRequestHead},
      {"http_response_head", HttpResponseHead},
      {"http_chunked", HttpChunked},
  };
  return kTargets;
}

}  // namespace pilotlight::fuzz
