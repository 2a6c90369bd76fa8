// A `pilotlight <command>` process for end-to-end tests: started with its
// JSON log in a file, stopped with a signal (SIGTERM, then SIGKILL after
// 10 s), its ports read from its "started" log line and its /metrics
// sampled.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/cluster/test_cluster.h"

namespace pilotlight::testcluster {

class Process {
 public:
  // Runs `binary` `args...` with stdout and stderr to `log`.
  Process(const std::string& binary, std::vector<std::string> args,
          const std::string& log)
      : log_(log) {
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargs;
    for (std::string& a : argv) {
      cargs.push_back(a.data());
    }
    cargs.push_back(nullptr);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      ::execv(cargs[0], cargs.data());
      ::_exit(127);
    }
    ::close(fd);
  }
  ~Process() { Kill(SIGTERM); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Sends `sig` and waits for the exit (SIGKILL after 10 s).
  void Kill(int sig) {
    if (pid_ <= 0) {
      return;
    }
    ::kill(pid_, sig);
    for (int i = 0; i < 100 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Sends `sig` without waiting.
  void Signal(int sig) const {
    if (pid_ > 0) {
      ::kill(pid_, sig);
    }
  }
  pid_t pid() const { return pid_; }
  bool Running() const {
    return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0;
  }

  std::string Log() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Field `key` of the first log line whose msg is `msg` (waits up to
  // `limit` for it); 0 when none.
  int LogInt(const std::string& msg, const std::string& key,
             absl::Duration limit = absl::Seconds(20)) const {
    int value = 0;
    WaitFor(limit, [&] {
      for (absl::string_view line : absl::StrSplit(Log(), '\n')) {
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object() && j.value("msg", "") == msg) {
          value = j.value(key, 0);
          return true;
        }
      }
      return false;
    });
    return value;
  }

  // One sample of a metric at 127.0.0.1:`port`/metrics, summed over its
  // label sets -- those whose line holds `only` (e.g. `namespace="ns"`),
  // when given: a controller watches every namespace, and another test's
  // endpoint may still be there; -1 when /metrics does not answer.
  static double Metric(int port, const std::string& name,
                       const std::string& only = "") {
    httplib::Client http("127.0.0.1", port);
    httplib::Result r = http.Get("/metrics");
    if (!r) {
      return -1;
    }
    double total = 0;
    for (absl::string_view line : absl::StrSplit(r->body, '\n')) {
      if (absl::StartsWith(line, name) &&
          (line.size() > name.size() &&
           (line[name.size()] == ' ' || line[name.size()] == '{')) &&
          absl::StrContains(line, only)) {
        double v = 0;
        if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) {
          total += v;
        }
      }
    }
    return total;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

}  // namespace pilotlight::testcluster
