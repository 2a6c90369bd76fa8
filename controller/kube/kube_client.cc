#include "controller/kube/kube_client.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/base/json_fields.h"

namespace pilotlight::kube {

// --- WatchDecoder
// --------------------------------------------------------------

absl::StatusOr<bool> WatchDecoder::Feed(
    absl::string_view chunk, const std::function<bool(WatchEvent)>& on_event) {
  pending_.append(chunk.data(), chunk.size());
  size_t start = 0;
  for (size_t nl = pending_.find('\n'); nl != std::string::npos;
       nl = pending_.find('\n', start)) {
    const absl::string_view line = absl::StripAsciiWhitespace(
        absl::string_view(pending_).substr(start, nl - start));
    start = nl + 1;
    if (line.empty()) {
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type") ||
        !j["type"].is_string()) {
      pending_.erase(0, start);
      return absl::DataLossError(absl::StrCat(
          "watch stream line is not an event: ", line.substr(0, 120)));
    }
    WatchEvent e{j["type"].get<std::string>(), std::move(j["object"])};
    if (!on_event(std::move(e))) {
      pending_.erase(0, start);
      return false;
    }
  }
  pending_.erase(0, start);
  return true;
}

// --- KubeClient
// ----------------------------------------------------------------

absl::StatusCode CodeForHttpStatus(int status) {
  switch (status) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return absl::StatusCode::kAborted;  // conflict or already exists
    case 410:
      return absl::StatusCode::kOutOfRange;  // resourceVersion too old
    case 429:
      return absl::StatusCode::kResourceExhausted;
    default:
      break;
  }
  if (status >= 500) {
    return absl::StatusCode::kUnavailable;
  }
  return absl::StatusCode::kUnknown;
}

namespace {

absl::Status HttpError(int status, const std::string& body) {
  std::string message = body.substr(0, 300);
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    message = j["message"].get<std::string>();
  }
  return absl::Status(CodeForHttpStatus(status),
                      absl::StrCat("HTTP ", status, ": ", message));
}

X509* ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return x;
}

EVP_PKEY* ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return k;
}

httplib::Result Send(httplib::SSLClient& http, absl::string_view method,
                     const std::string& p, const httplib::Headers& headers,
                     const std::string& b, const std::string& ct) {
  if (method == "GET") {
    return http.Get(p, headers);
  }
  if (method == "POST") {
    return http.Post(p, headers, b, ct);
  }
  if (method == "PUT") {
    return http.Put(p, headers, b, ct);
  }
  if (method == "PATCH") {
    return http.Patch(p, headers, b, ct);
  }
  return http.Delete(p, headers, b, ct);
}

std::atomic<int64_t> total_requests{0};

}  // namespace

KubeClient::KubeClient(KubeConfig config) : config_(std::move(config)) {}
KubeClient::~KubeClient() = default;

absl::StatusOr<std::unique_ptr<KubeClient>> KubeClient::Create(
    const KubeConfig& config) {
  // OpenSSL writes to sockets with write(2): a peer that went away (or a
  // Cancel()ed stream) would raise SIGPIPE and kill the process. Every
  // such write already fails with EPIPE, which is handled as an error.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  auto c = std::unique_ptr<KubeClient>(new KubeClient(config));
  if (absl::Status st = c->Connect(); !st.ok()) {
    return st;
  }
  return c;
}

absl::Status KubeClient::Connect() {
  absl::string_view s = config_.server;
  if (!absl::ConsumePrefix(&s, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server ", config_.server, " must be https://host[:port]"));
  }
  // host, host:port, [v6] or [v6]:port
  s = s.substr(0, s.find('/'));
  const size_t bracket = s.find(']');
  const size_t colon = s.rfind(':');
  absl::string_view host = s;
  if (colon != absl::string_view::npos &&
      (bracket == absl::string_view::npos || bracket < colon)) {
    if (!absl::SimpleAtoi(s.substr(colon + 1), &port_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("server ", config_.server, " has a bad port"));
    }
    host = s.substr(0, colon);
  }
  absl::ConsumePrefix(&host, "[");
  absl::ConsumeSuffix(&host, "]");
  host_ = std::string(host);
  std::unique_ptr<httplib::SSLClient> ssl;
  if (!config_.client_cert_pem.empty()) {
    X509* cert = ParseCert(config_.client_cert_pem);
    EVP_PKEY* key = ParseKey(config_.client_key_pem);
    if (cert == nullptr || key == nullptr) {
      X509_free(cert);
      EVP_PKEY_free(key);
      return absl::InvalidArgumentError(
          "client certificate or key is not valid PEM");
    }
    ssl = std::make_unique<httplib::SSLClient>(host_, port_, cert, key);
    X509_free(cert);
    EVP_PKEY_free(key);
  } else {
    ssl = std::make_unique<httplib::SSLClient>(host_, port_);
  }
  if (!config_.ca_pem.empty()) {
    X509_STORE* store = X509_STORE_new();
    BIO* bio = BIO_new_mem_buf(config_.ca_pem.data(),
                               static_cast<int>(config_.ca_pem.size()));
    int added = 0;
    while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, x);
      X509_free(x);
      ++added;
    }
    BIO_free(bio);
    if (added == 0) {
      X509_STORE_free(store);
      return absl::InvalidArgumentError(
          "certificate authority is not valid PEM");
    }
    ssl->set_ca_cert_store(store);  // the client owns it now
  }
  ssl->enable_server_certificate_verification(
      !config_.insecure_skip_tls_verify);
  http_ = std::move(ssl);
  http_->set_connection_timeout(5, 0);
  http_->set_read_timeout(30, 0);
  http_->set_keep_alive(true);
  // A request's body is not held back for the server's delayed ACK of its
  // headers (Nagle: 40 ms on every PATCH).
  http_->set_tcp_nodelay(true);
  return absl::OkStatus();
}

absl::Status KubeClient::Authorize() {
  std::string token = config_.token;
  if (!config_.token_file.empty()) {
    std::ifstream in(config_.token_file);
    if (!in) {
      return absl::UnauthenticatedError(
          absl::StrCat("cannot read token file ", config_.token_file));
    }
    std::stringstream s;
    s << in.rdbuf();
    token = std::string(absl::StripAsciiWhitespace(s.str()));
  }
  if (!token.empty()) {
    http_->set_bearer_token_auth(token);
  }
  return absl::OkStatus();
}

absl::StatusOr<KubeClient::Response> KubeClient::Request(
    absl::string_view method, absl::string_view path, absl::string_view body,
    absl::string_view content_type) {
  if (absl::Status st = Authorize(); !st.ok()) {
    return st;
  }
  const std::string p(path);
  const std::string b(body);
  const std::string ct(content_type);
  const httplib::Headers headers = {{"Accept", "application/json"}};
  if (method != "GET" && method != "POST" && method != "PUT" &&
      method != "PATCH" && method != "DELETE") {
    return absl::InvalidArgumentError(absl::StrCat("method ", method));
  }
  for (int attempt = 0;; ++attempt) {
    if (throttle_ != nullptr) {
      throttle_->Wait();
    }
    ++requests_;
    ++total_requests;
    httplib::Result r = Send(*http_, method, p, headers, b, ct);
    if (r && r->status == 429 && attempt < 3) {
      int wait_s = 1;
      (void)absl::SimpleAtoi(r->get_header_value("Retry-After"), &wait_s);
      std::this_thread::sleep_for(
          std::chrono::seconds(std::clamp(wait_s, 1, 10)));
      continue;
    }
    if (!r && r.error() == httplib::Error::Write && attempt == 0) {
      // A kept-alive connection the server had closed while idle: the
      // request never reached it (the write failed), so sending it again on
      // a new connection is safe -- and spares a poked scale-up the
      // work queue's back-off.
      continue;
    }
    if (!r) {
      return absl::UnavailableError(absl::StrCat(method, " ", path, ": ",
                                                 httplib::to_string(r.error()),
                                                 " (", config_.server, ")"));
    }
    if (r->status < 200 || r->status >= 300) {
      return HttpError(r->status, r->body);
    }
    return Response{r->status, r->body};
  }
}

void KubeClient::Cancel() { http_->stop(); }

int64_t KubeClient::TotalRequests() { return total_requests.load(); }

absl::Status KubeClient::Watch(
    absl::string_view path, const std::function<bool(WatchEvent)>& on_event) {
  if (absl::Status st = Authorize(); !st.ok()) {
    return st;
  }
  if (throttle_ != nullptr) {
    throttle_->Wait();
  }
  ++requests_;
  ++total_requests;
  WatchDecoder decoder;
  absl::Status stream_status;
  std::string error_body;
  int status = 0;
  const httplib::Headers headers = {{"Accept", "application/json"}};
  http_->set_read_timeout(330, 0);  // the server ends watches within ~5-10 min
  httplib::Result r = http_->Get(
      std::string(path), headers,
      [&](const httplib::Response& res) {
        status = res.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (status < 200 || status >= 300) {
          error_body.append(data, n);
          return true;
        }
        absl::StatusOr<bool> more =
            decoder.Feed(absl::string_view(data, n), [&](WatchEvent e) {
              if (e.type == "ERROR") {
                const auto code =
                    static_cast<int>(IntField(e.object, {"code"}));
                stream_status = absl::Status(
                    code == 410 ? absl::StatusCode::kOutOfRange
                                : CodeForHttpStatus(code),
                    absl::StrCat("watch error ", code, ": ",
                                 StringField(e.object, {"message"})));
                return false;
              }
              return on_event(std::move(e));
            });
        if (!more.ok()) {
          stream_status = more.status();
          return false;
        }
        return *more;
      });
  http_->set_read_timeout(30, 0);
  if (!stream_status.ok()) {
    return stream_status;
  }
  if (status != 0 && (status < 200 || status >= 300)) {
    return HttpError(status, error_body);
  }
  if (!r && r.error() != httplib::Error::Canceled) {
    return absl::UnavailableError(
        absl::StrCat("watch ", path, ": ", httplib::to_string(r.error())));
  }
  return absl::OkStatus();
}

}  // namespace pilotlight::kube
