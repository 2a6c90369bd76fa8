// The activator's cluster fixture: the real `pilotlight controller` and
// `pilotlight activator` binaries on the local test cluster, OpenAI
// completions through the activator with each answer checked, and the
// latency summaries the tests print.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "controller/sim/load_trace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/bench/proc_stats.h"
#include "tests/cluster/endpoint_fixture.h"
#include "tests/cluster/process.h"
#include "tests/loopback.h"

namespace pilotlight::activator {

using json = nlohmann::json;
using testcluster::Process;
using testcluster::Shell;
using testcluster::WaitFor;

struct Outcome {
  int status = 0;
  bool body_ok = false;
  absl::Duration latency;
  std::string detail;
  std::string retry_after;
};

// One OpenAI completion through the activator; `tokens` makes each
// request's answer its own (N " tok" pieces, usage N).
inline Outcome Complete(int port, const std::string& path, int tokens,
                        bool stream) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120);
  c.set_connection_timeout(30);
  const json body = {{"model", "llama-3.1-8b"},
                     {"prompt", "Say hello"},
                     {"max_tokens", tokens},
                     {"stream", stream}};
  Outcome o;
  const absl::Time t0 = absl::Now();
  httplib::Result r = c.Post(path, body.dump(), "application/json");
  o.latency = absl::Now() - t0;
  if (!r) {
    o.detail = httplib::to_string(r.error());
    return o;
  }
  o.status = r->status;
  o.retry_after = r->get_header_value("Retry-After");
  o.detail = r->body.substr(0, 300);
  if (r->status != 200) {
    return o;
  }
  if (stream) {
    // tokens events, then [DONE].
    int events = 0;
    for (size_t at = r->body.find("data: {"); at != std::string::npos;
         at = r->body.find("data: {", at + 1)) {
      ++events;
    }
    o.body_ok = events == tokens && absl::EndsWith(r->body, "data: [DONE]\n\n");
  } else {
    const json j = json::parse(r->body, nullptr, false);
    o.body_ok = j.is_object() &&
                j["usage"].value("completion_tokens", -1) == tokens &&
                absl::EndsWith(j["choices"][0].value("text", ""),
                               absl::StrCat(" tok", tokens - 1));
  }
  return o;
}

inline std::string Local(int port) { return absl::StrCat("127.0.0.1:", port); }

inline absl::Duration Quantile(std::vector<absl::Duration> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty()
             ? absl::ZeroDuration()
             : v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

// The log lines of level warn or error (the last 40), each prefixed with
// `who`: what a failed soak shows, as the cluster's log folder goes with
// the fixture.
inline std::string Problems(const std::string& log, const std::string& who) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, "\"level\":\"warn") ||
        absl::StrContains(line, "\"level\":\"error")) {
      lines.push_back(absl::StrCat(who, ": ", line));
    }
  }
  if (lines.size() > 40) {
    lines.erase(lines.begin(), lines.end() - 40);
  }
  return absl::StrCat(absl::StrJoin(lines, "\n"), lines.empty() ? "" : "\n");
}

class ActivatorClusterTest : public testcluster::EndpointFixture {
 protected:
  // Endpoint "chat" (variant chat-l4, at zero) whose engine is the second
  // of `models` (port 8001) on Deployment pool-a100: one a100 pod running
  // an engine of each, with sleep mode.
  void ChatOnAPool(const std::string& models) {
    ASSERT_TRUE(CreateDeployment("pool-a100", 1, "a100-80gb", "on-demand",
                                 {"--enable-sleep-mode", "--models", models})
                    .ok());
    ASSERT_TRUE(CreateDeployment("chat-l4", 0, "l4", "on-demand").ok());
    json spec = OneVariantSpec("chat-l4", 0);
    spec["sleepPool"] = {{"deployment", "pool-a100"},
                         {"port", 8001},
                         {"gpuClass", "a100-80gb-on-demand"}};
    ASSERT_TRUE(CreateAutoscaler("chat", spec).ok());
  }
  // Endpoints "chat" and "code" (variants chat-l4 and code-l4, at zero)
  // whose engines are the two of Deployment pool-a100 (ports 8000 and
  // 8001): one a100 pod with sleep mode, room awake for one of them (chat's
  // starts awake, code's asleep). `wake_fails`: the engines (by model) whose
  // every wake fails (the stand-in's --wake-fails).
  static constexpr int kChatPort = 8000;
  static constexpr int kCodePort = 8001;
  void ChatAndCodeOnAPool(const std::string& wake_fails = "") {
    std::vector<std::string> args = {"--enable-sleep-mode", "--models",
                                     "chat,code"};
    if (!wake_fails.empty()) {
      args.insert(args.end(), {"--wake-fails", wake_fails});
    }
    ASSERT_TRUE(
        CreateDeployment("pool-a100", 1, "a100-80gb", "on-demand", args).ok());
    for (const auto& [name, port] :
         {std::pair<std::string, int>{"chat", kChatPort},
          {"code", kCodePort}}) {
      ASSERT_TRUE(CreateDeployment(name + "-l4", 0, "l4", "on-demand").ok());
      json spec = OneVariantSpec(name + "-l4", 0);
      spec["sleepPool"] = {{"deployment", "pool-a100"},
                           {"port", port},
                           {"gpuClass", "a100-80gb-on-demand"}};
      ASSERT_TRUE(CreateAutoscaler(name, spec).ok());
    }
  }
  // Whether the controller found both engines of ChatAndCodeOnAPool (and
  // the activator its targets) within a minute.
  bool ChatAndCodeFound() {
    return WaitFor(absl::Seconds(60), [&] {
      return Condition(Autoscaler("chat"), "SleepPool") == "True" &&
             Condition(Autoscaler("code"), "SleepPool") == "True";
    });
  }
  // `endpoint`'s cold-start lead (status.coldStart.leadSeconds; 0 before
  // the controller wrote one).
  double LeadSeconds(const std::string& endpoint) {
    const json a = Autoscaler(endpoint);
    return a.contains("status") && a["status"].contains("coldStart")
               ? a["status"]["coldStart"].value("leadSeconds", 0.0)
               : 0.0;
  }
  // The pool-a100 pod's address ("" before it has one).
  std::string PoolPodIp() {
    std::string ip;
    for (const json& p : Pods()) {
      if (absl::StartsWith(p["metadata"].value("name", ""), "pool-a100")) {
        ip = p["status"].value("podIP", "");
      }
    }
    return ip;
  }
  // Whether the engine at ip:port says it is asleep (GET /is_sleeping).
  static bool EngineAsleep(const std::string& ip, int port) {
    httplib::Client c(ip, port);
    const httplib::Result r = c.Get("/is_sleeping");
    return r && absl::StrContains(r->body, "\"is_sleeping\":true");
  }
  // Runs `request` while watching `endpoint`'s SleepPool condition (every
  // 250 ms, from a thread of its own): the message of the first `reason`
  // seen before `request` returned ("" if none).
  std::string SleepPoolSeenDuring(const std::string& endpoint,
                                  const std::string& reason,
                                  const std::function<void()>& request) {
    std::atomic<bool> answered{false};
    std::string seen;
    std::thread watch([&] {
      while (!answered) {
        std::string r;
        std::string message;
        Condition(Autoscaler(endpoint), "SleepPool", &r, &message);
        if (r == reason) {
          seen = message;
          return;
        }
        absl::SleepFor(absl::Milliseconds(250));
      }
    });
    request();
    answered = true;
    watch.join();
    return seen;
  }
  std::string CompletionsPath(const std::string& name) const {
    return absl::StrCat("/", ns_, "/", name, "/v1/completions");
  }
  // The controller with the fast windows and its gRPC demand service.
  std::unique_ptr<Process> StartController() const {
    std::vector<std::string> flags = {"controller"};
    for (const std::string& f : FastFlags()) {
      flags.push_back(f);
    }
    flags.push_back("--no-leader-election");
    auto p = std::make_unique<Process>(PILOTLIGHT_BINARY, flags,
                                       LogPath("controller"));
    return p;
  }
  // The activator as service account pilotlight-activator (the shipped
  // RBAC only), so every test checks that it is enough.
  std::unique_ptr<Process> StartActivator(
      const std::string& controllers,
      std::vector<std::string> extra = {}) const {
    const std::string sa = ServiceAccountKubeconfig("pilotlight-activator");
    std::vector<std::string> flags = {"activator",
                                      "--kubeconfig",
                                      sa,
                                      "--controller",
                                      controllers,
                                      "--listen",
                                      "127.0.0.1:0",
                                      "--admin-listen",
                                      "127.0.0.1:0",
                                      "--drain-delay",
                                      "0s",
                                      "--name",
                                      "act-test"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(PILOTLIGHT_BINARY, flags,
                                     LogPath("activator"));
  }
  std::string Path() const {
    return absl::StrCat("/", ns_, "/chat/v1/completions");
  }

  // Fires `n` concurrent requests (every other one streaming).
  std::vector<Outcome> Burst(int port, int n) const {
    std::vector<Outcome> out(static_cast<size_t>(n));
    std::vector<std::thread> clients;
    for (int i = 0; i < n; ++i) {
      clients.emplace_back([&, i] {
        out[static_cast<size_t>(i)] =
            Complete(port, Path(), 2 + i % 5, i % 2 == 0);
      });
    }
    for (std::thread& t : clients) {
      t.join();
    }
    return out;
  }

  static void Report(const char* what, const std::vector<Outcome>& out) {
    std::vector<absl::Duration> ok;
    for (const Outcome& o : out) {
      if (o.status == 200) {
        ok.push_back(o.latency);
      }
    }
    std::printf("%s: %zu of %zu answered 200; latency p50 %s p99 %s max %s\n",
                what, ok.size(), out.size(),
                absl::FormatDuration(Quantile(ok, 0.5)).c_str(),
                absl::FormatDuration(Quantile(ok, 0.99)).c_str(),
                absl::FormatDuration(Quantile(ok, 1.0)).c_str());
  }
};

}  // namespace pilotlight::activator
