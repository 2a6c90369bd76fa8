#include "controller/activator/forward.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/activator/http_server.h"

namespace pilotlight::activator {
namespace {

bool HopByHop(const std::string& name) {
  static constexpr std::array<const char*, 9> kHop = {
      "connection",        "keep-alive", "proxy-connection",
      "transfer-encoding", "te",         "trailer",
      "upgrade",           "host",       "content-length"};
  const std::string lower = absl::AsciiStrToLower(name);
  for (const char* h : kHop) {
    if (lower == h) {
      return true;
    }
  }
  return false;
}

int64_t Micros(absl::Duration d) { return absl::ToInt64Microseconds(d); }

}  // namespace

Forward::Forward(const httplib::Request& req, const std::string& target,
                 const std::string& address, const ForwardTimeouts& timeouts)
    : timeouts_(timeouts), address_(address), started_(absl::Now()) {
  const absl::StatusOr<std::pair<std::string, int>> pod =
      SplitHostPort(address, "pod");
  client_ = pod.ok()
                ? std::make_unique<httplib::Client>(pod->first, pod->second)
                : std::make_unique<httplib::Client>(address, 80);
  const int64_t connect = Micros(timeouts.connect);
  client_->set_connection_timeout(connect / 1000000, connect % 1000000);
  // A backstop: the response-start, idle and total limits are enforced
  // here, with Cancel.
  const int64_t read = Micros(std::max(timeouts.response_start, timeouts.idle) +
                              absl::Seconds(1));
  client_->set_read_timeout(read / 1000000, read % 1000000);
  client_->set_write_timeout(60);
  client_->set_keep_alive(false);
  client_->set_tcp_nodelay(true);
  client_->set_decompress(false);  // bytes pass as they are

  httplib::Request up;
  up.method = req.method;
  up.path = target;
  up.body = req.body;
  for (const auto& [name, value] : req.headers) {
    if (!HopByHop(name) && absl::AsciiStrToLower(name) != "remote_addr" &&
        absl::AsciiStrToLower(name) != "remote_port" &&
        absl::AsciiStrToLower(name) != "local_addr" &&
        absl::AsciiStrToLower(name) != "local_port") {
      up.headers.emplace(name, value);
    }
  }
  up.headers.emplace("X-Forwarded-For", req.remote_addr);
  // On a shared pool: a burst does not pay a thread's creation per request.
  static GrowingPool* const pool = new GrowingPool(0, 1 << 16);
  pool->enqueue([this, up = std::move(up)]() mutable { Run(std::move(up)); });
}

Forward::~Forward() {
  Cancel();
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return finished_; });
}

void Forward::Run(httplib::Request up) {
  up.response_handler = [this](const httplib::Response& r) {
    const std::lock_guard<std::mutex> lock(mu_);
    status_ = r.status;
    headers_ = r.headers;
    responded_ = true;
    changed_.notify_all();
    return !cancelled_;
  };
  up.content_receiver = [this](const char* data, size_t len, uint64_t,
                               uint64_t) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(
        lock, [this] { return cancelled_ || buffered_ < kMaxBufferedBytes; });
    if (cancelled_) {
      return false;
    }
    chunks_.emplace_back(data, len);
    buffered_ += len;
    changed_.notify_all();
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  client_->send(up, res, error);
  const std::lock_guard<std::mutex> lock(mu_);
  error_ = error;
  done_ = true;
  finished_ = true;
  changed_.notify_all();
}

Forward::Start Forward::WaitForResponse() {
  std::unique_lock<std::mutex> lock(mu_);
  const bool in = changed_.wait_until(
      lock, absl::ToChronoTime(started_ + timeouts_.response_start),
      [this] { return responded_ || done_; });
  if (responded_) {
    return Start::kResponded;
  }
  if (!in) {
    why_ = absl::StrCat("no response within ",
                        absl::FormatDuration(timeouts_.response_start));
    lock.unlock();
    Cancel();
    return Start::kTimedOut;
  }
  return error_ == httplib::Error::Connection ||
                 error_ == httplib::Error::ConnectionTimeout
             ? Start::kConnectFailed
             : Start::kFailed;
}

std::string Forward::error() const {
  const std::lock_guard<std::mutex> lock(mu_);
  if (!why_.empty()) {
    return why_;
  }
  return httplib::to_string(error_);
}

bool Forward::Pump(httplib::DataSink& sink) {
  std::unique_lock<std::mutex> lock(mu_);
  const absl::Time idle_until = absl::Now() + timeouts_.idle;
  const absl::Time deadline = std::min(idle_until, started_ + timeouts_.total);
  const bool woke = changed_.wait_until(
      lock, absl::ToChronoTime(deadline),
      [this] { return !chunks_.empty() || done_ || cancelled_; });
  if (!woke) {
    why_ = absl::Now() >= started_ + timeouts_.total
               ? absl::StrCat("response took over ",
                              absl::FormatDuration(timeouts_.total))
               : absl::StrCat("no bytes for ",
                              absl::FormatDuration(timeouts_.idle));
    lock.unlock();
    Cancel();
    return false;
  }
  std::deque<std::string> chunks;
  chunks.swap(chunks_);
  buffered_ = 0;
  const bool done = done_ && !cancelled_;
  const bool cancelled = cancelled_;
  const bool ok = error_ == httplib::Error::Success;
  changed_.notify_all();  // room for the upstream again
  lock.unlock();
  for (const std::string& c : chunks) {
    if (!sink.write(c.data(), c.size())) {
      Cancel();  // the client went away
      return false;
    }
  }
  if (done) {
    if (ok) {
      sink.done();
    }
    return ok;
  }
  return !cancelled;
}

void Forward::Cancel() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_ || done_) {
      cancelled_ = true;
      changed_.notify_all();
      return;
    }
    cancelled_ = true;
    changed_.notify_all();
  }
  client_->stop();
}

}  // namespace pilotlight::activator
