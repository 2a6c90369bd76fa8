// A Prometheus HTTP API stand-in on loopback, over real HTTP: every instant
// query (POST /api/v1/query, under an optional path prefix, as behind a
// proxy) is answered by a function of its PromQL text -- what a working,
// broken or slow Prometheus would say.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace pilotlight::fakes {

class FakePrometheus {
 public:
  using Answer =
      std::function<void(const std::string& query, httplib::Response& res)>;

  explicit FakePrometheus(Answer answer, std::string prefix = "")
      : prefix_(std::move(prefix)) {
    server_.Post(prefix_ + "/api/v1/query",
                 [this, answer = std::move(answer)](const httplib::Request& req,
                                                    httplib::Response& res) {
                   const std::string q = req.get_param_value("query");
                   {
                     const std::lock_guard<std::mutex> lock(mu_);
                     last_query_ = q;
                   }
                   answer(q, res);
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~FakePrometheus() {
    server_.stop();
    thread_.join();
  }
  FakePrometheus(const FakePrometheus&) = delete;
  FakePrometheus& operator=(const FakePrometheus&) = delete;

  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + prefix_;
  }
  std::string last_query() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return last_query_;
  }

 private:
  const std::string prefix_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::string last_query_;
};

}  // namespace pilotlight::fakes
