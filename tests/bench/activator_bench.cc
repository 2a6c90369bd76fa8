// activator_bench: what the activator costs on the warm path, and what a
// held request costs, measured side by side in one run (no cluster):
//
//   1. warm path: C concurrent clients, each streaming R responses (16 SSE
//      chunks, 2 ms apart) on a keep-alive connection -- straight to the
//      model server (also with a new connection per request), through a
//      bare TCP relay on one epoll thread and on a thread per connection
//      (tcp_relay.h: the floor under any proxy in the path), through the
//      activator on cpp-httplib's server (its front before 2026-12-05: the
//      baseline), on its own front with a new pod connection per request
//      (before 2026-12-05) and as it runs (pod connections reused), and
//      straight again (the run's own drift). Each path runs once unmeasured
//      first. Prints time to first byte and total, p50/p99, requests/s, the
//      differences, and the CPU per request of the process in between. Then the
//      CPU each activator spends in 2 s with N idle kept-alive client
//      connections (--idle).
//   2. burst: B requests at once, each on a new connection, to a warm
//      endpoint -- straight, through the relay, then through the activator,
//      twice (the second finds the connection threads the first made).
//      Prints p50/p99 and the added p99.
//   3. holding: H requests held at zero (1 KiB bodies, new connections) by
//      an activator in a child process; prints its resident memory before
//      and while holding, per held request.
//
// The activator (and each relay) runs in its own process, as deployed. On a
// machine where the clients, the model server and the activator share the
// cores, its CPU is taken from the model server's (and the clients'): with
// --activator-cpu N --rest-cpu M it gets its own core N, the clients and
// the model server core M -- both paths with the same core M, the
// activator's on top, as its own pod on another node would be.
//
// Usage: activator_bench [--clients 64] [--requests 50] [--burst 1000]
//                        [--held 2000] [--idle 1000]
//                        [--activator-cpu N --rest-cpu M]
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "controller/activator/proxy.h"
#include "controller/activator/router.h"
#include "controller/http/front_server.h"
#include "controller/http/http_server.h"
#include "httplib.h"
#include "prometheus/registry.h"
#include "tests/bench/proc_stats.h"
#include "tests/bench/tcp_relay.h"
#include "tests/loopback.h"

namespace {

using namespace pilotlight::activator;  // NOLINT(google-build-using-namespace)
namespace http = pilotlight::http;
using pilotlight::bench::ProcessCpu;

constexpr char kEp[] = "bench/llm";

// A model server stand-in with a fixed service: `chunks` SSE events `gap`
// apart (a decode at 500 tokens/s), any number at once.
class Upstream {
 public:
  Upstream(int chunks, absl::Duration gap) {
    socket_ = http::ConfigureHttpServer(server_, {});
    server_.Post("/v1/completions", [chunks, gap](const httplib::Request&,
                                                  httplib::Response& res) {
      res.set_chunked_content_provider(
          "text/event-stream",
          [chunks, gap, sent = 0](size_t, httplib::DataSink& sink) mutable {
            if (sent < chunks) {
              absl::SleepFor(gap);
              const std::string ev =
                  absl::StrCat("data: {\"token\": ", sent++, "}\n\n");
              return sink.write(ev.data(), ev.size());
            }
            sink.write("data: [DONE]\n\n", 14);
            sink.done();
            return true;
          });
    });
    port_ = *http::BindHttpServer(server_, *socket_, "127.0.0.1", 0, 4096);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Upstream() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::shared_ptr<http::ListenSocket> socket_;
  int port_ = 0;
  std::thread thread_;
};

// The activator's front in this process: the Proxy on the activator's
// http::FrontServer, or (`httplib_front`, the front before 2026-12-05) on
// cpp-httplib's server; `reuse`: pod connections kept for the next request
// (since 2026-12-05), else one per request (before; the baselines).
class Front {
 public:
  Front(const std::string& target, int cap, bool httplib_front, bool reuse)
      : metrics_(registry_) {
    router_.SetEndpoints({kEp});
    if (!target.empty()) {
      router_.SetTargets(kEp, {target}, cap);
    }
    EndpointTimeouts t;
    t.activation = absl::Seconds(10);
    ProxyOptions o;
    if (!reuse) {
      o.upstream.idle = absl::ZeroDuration();
    }
    proxy_ = std::make_unique<Proxy>(
        o, router_, [t](const std::string&) { return t; }, metrics_);
    proxy_->WatchClients(&watch_);  // as the activator runs it
    watch_.Start();
    if (httplib_front) {
      socket_ = http::ConfigureHttpServer(server_, {});
      proxy_->Install(server_);
      port_ = *http::BindHttpServer(server_, *socket_, "127.0.0.1", 0, 4096);
      thread_ = std::thread([this] { server_.listen_after_bind(); });
      while (!server_.is_running()) {
        absl::SleepFor(absl::Milliseconds(1));
      }
      return;
    }
    front_ = std::make_unique<http::FrontServer>(
        http::FrontServerOptions{},
        [this](const httplib::Request& req, httplib::Response& res,
               int client_socket) { proxy_->Handle(req, res, client_socket); });
    port_ = *front_->Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { front_->Serve(); });
    while (!front_->running()) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  ~Front() {
    router_.Close();
    if (front_ != nullptr) {
      front_->Stop();
    } else {
      server_.stop();
    }
    thread_.join();
  }
  int port() const { return port_; }

 private:
  prometheus::Registry registry_;
  Metrics metrics_;
  Router router_{HoldLimits{.max_held_per_endpoint = 100000,
                            .max_held_bytes_per_endpoint = int64_t{1} << 40,
                            .max_held_total = 100000,
                            .max_held_bytes_total = int64_t{1} << 40}};
  http::ClientWatch watch_;
  std::unique_ptr<Proxy> proxy_;
  std::unique_ptr<http::FrontServer> front_;
  httplib::Server server_;
  std::shared_ptr<http::ListenSocket> socket_;
  int port_ = 0;
  std::thread thread_;
};

struct Sample {
  double ttfb_ms = 0;
  double total_ms = 0;
  bool ok = false;
};

Sample Stream(httplib::Client& c, const std::string& path) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = R"({"model": "m", "prompt": "hi", "stream": true})";
  req.headers.emplace("Content-Type", "application/json");
  const absl::Time t0 = absl::Now();
  absl::Time first = t0;
  bool got = false;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
    if (!got) {
      first = absl::Now();
      got = true;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = c.send(req, res, err);
  Sample s;
  s.ok = sent && res.status == 200 && got;
  s.ttfb_ms = absl::ToDoubleMilliseconds(first - t0);
  s.total_ms = absl::ToDoubleMilliseconds(absl::Now() - t0);
  return s;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

struct Run {
  std::vector<double> ttfb, total;
  int failed = 0;
  double seconds = 0;
};

Run Concurrent(int port, const std::string& path, int clients, int requests,
               bool new_connections) {
  Run r;
  std::mutex mu;
  std::vector<std::thread> threads;
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&] {
      auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
      c->set_keep_alive(!new_connections);
      c->set_tcp_nodelay(true);
      c->set_read_timeout(60);
      c->set_connection_timeout(60);
      for (int k = 0; k < requests; ++k) {
        const Sample s = Stream(*c, path);
        const std::lock_guard<std::mutex> lock(mu);
        if (s.ok) {
          r.ttfb.push_back(s.ttfb_ms);
          r.total.push_back(s.total_ms);
        } else {
          ++r.failed;
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  r.seconds = absl::ToDoubleSeconds(absl::Now() - t0);
  return r;
}

void Print(const char* what, const Run& r) {
  std::printf(
      "  %-24s ttfb p50 %7.2f p99 %7.2f ms | total p50 %7.2f p99 %7.2f ms | "
      "%7.1f req/s | failed %d\n",
      what, Quantile(r.ttfb, 0.5), Quantile(r.ttfb, 0.99),
      Quantile(r.total, 0.5), Quantile(r.total, 0.99),
      static_cast<double>(r.total.size()) / r.seconds, r.failed);
}

// Pins the calling process (and the threads it makes after) to `cpu`;
// -1: no pinning.
void PinTo(int cpu) {
  if (cpu < 0) {
    return;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<size_t>(cpu), &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    std::perror("sched_setaffinity");
    std::exit(2);
  }
}

// An activator front (or a bare TCP relay, tcp_relay.h) in its own
// process, as it is deployed (its own pod), pinned to `cpu` (-1: any).
// Forked before this process makes any thread; `Start` then hands it the
// pod's port (0: no pod, everything is held) and returns its own.
class ForkedFront {
 public:
  enum class Kind {
    kActivator,
    kActivatorNoReuse,
    kHttplibActivator,
    kRelay,
    kThreadedRelay
  };
  explicit ForkedFront(int cpu, Kind kind = Kind::kActivator) {
    int to_child[2];
    int to_parent[2];
    if (::pipe(to_child) != 0 || ::pipe(to_parent) != 0) {
      std::perror("pipe");
      std::exit(2);
    }
    pid_ = ::fork();
    if (pid_ < 0) {
      std::perror("fork");
      std::exit(2);
    }
    if (pid_ == 0) {
      ::close(to_child[1]);
      ::close(to_parent[0]);
      PinTo(cpu);
      // Its threads inherit the name: `perf report --comm activator`
      // (relay-epoll, relay-threads).
      ::prctl(PR_SET_NAME, kind == Kind::kActivator          ? "activator"
                           : kind == Kind::kActivatorNoReuse ? "activator-new"
                           : kind == Kind::kHttplibActivator ? "activator-old"
                           : kind == Kind::kRelay            ? "relay-epoll"
                                                             : "relay-threads");
      int target = 0;
      if (::read(to_child[0], &target, sizeof target) != sizeof target) {
        ::_exit(0);
      }
      if (kind == Kind::kRelay || kind == Kind::kThreadedRelay) {
        pilotlight::bench::RunTcpRelay(
            target, [&](int p) { (void)::write(to_parent[1], &p, sizeof p); },
            kind == Kind::kThreadedRelay);
        ::_exit(1);  // could not listen: the parent's read fails
      }
      Front front(target == 0 ? "" : absl::StrCat("127.0.0.1:", target),
                  target == 0 ? 1 : 100000, kind == Kind::kHttplibActivator,
                  kind == Kind::kActivator);
      const int p = front.port();
      (void)::write(to_parent[1], &p, sizeof p);
      ::pause();
      ::_exit(0);
    }
    ::close(to_child[0]);
    ::close(to_parent[1]);
    to_child_ = to_child[1];
    from_child_ = to_parent[0];
  }
  ~ForkedFront() {
    ::close(to_child_);
    ::close(from_child_);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ForkedFront(const ForkedFront&) = delete;
  ForkedFront& operator=(const ForkedFront&) = delete;

  int Start(int target_port) {
    int port = 0;
    if (::write(to_child_, &target_port, sizeof target_port) !=
            sizeof target_port ||
        ::read(from_child_, &port, sizeof port) != sizeof port) {
      std::fprintf(stderr, "the activator's process did not start\n");
      std::exit(2);
    }
    return port;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
};

}  // namespace

int main(int argc, char** argv) {
  int clients = 64;
  int requests = 50;
  int burst = 1000;
  int held = 2000;
  int idle = 1000;
  int activator_cpu = -1;
  int rest_cpu = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--clients") {
      clients = v;
    } else if (flag == "--requests") {
      requests = v;
    } else if (flag == "--burst") {
      burst = v;
    } else if (flag == "--held") {
      held = v;
    } else if (flag == "--idle") {
      idle = v;
    } else if (flag == "--activator-cpu") {
      activator_cpu = v;
    } else if (flag == "--rest-cpu") {
      rest_cpu = v;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  // Both activators forked first, before this process makes a thread.
  ForkedFront holding(activator_cpu);
  ForkedFront forwarding(activator_cpu);
  ForkedFront relaying(activator_cpu, ForkedFront::Kind::kRelay);
  ForkedFront old_front(activator_cpu, ForkedFront::Kind::kHttplibActivator);
  ForkedFront threaded(activator_cpu, ForkedFront::Kind::kThreadedRelay);
  ForkedFront no_reuse(activator_cpu, ForkedFront::Kind::kActivatorNoReuse);
  PinTo(rest_cpu);

  // 3 first: a fresh process, nothing else running.
  const int hold_port = holding.Start(0);
  absl::SleepFor(absl::Milliseconds(200));
  const double rss0 = pilotlight::bench::RssMiB(holding.pid());
  std::vector<std::thread> holders;
  for (int i = 0; i < held; ++i) {
    holders.emplace_back([hold_port] {
      httplib::Client c("127.0.0.1", hold_port);
      c.set_read_timeout(60);
      c.Post("/bench/llm/v1/completions", std::string(1024, 'x'),
             "application/json");
    });
  }
  const double hold_cpu0 = ProcessCpu(holding.pid());
  absl::SleepFor(absl::Seconds(3));
  const double rss1 = pilotlight::bench::RssMiB(holding.pid());
  const double hold_cpu1 = ProcessCpu(holding.pid());
  std::printf("holding (activator in its own process, no pod):\n");
  std::printf(
      "  %d held: RSS %.1f -> %.1f MiB, %.1f KiB per held request; %.0f ms "
      "of CPU in the 3 s they came and waited\n",
      held, rss0, rss1, (rss1 - rss0) * 1024 / held,
      (hold_cpu1 - hold_cpu0) * 1e3);
  ::kill(holding.pid(), SIGKILL);
  for (std::thread& t : holders) {
    t.join();
  }

  Upstream upstream(16, absl::Milliseconds(2));
  const int front_port = forwarding.Start(upstream.port());
  const int relay_port = relaying.Start(upstream.port());
  const int old_front_port = old_front.Start(upstream.port());
  const int threaded_port = threaded.Start(upstream.port());
  const int no_reuse_port = no_reuse.Start(upstream.port());
  if (activator_cpu >= 0 || rest_cpu >= 0) {
    std::printf("activator on cpu %d; clients and model server on cpu %d\n",
                activator_cpu, rest_cpu);
  }
  std::printf("warm path: %d clients x %d streamed responses (keep-alive):\n",
              clients, requests);
  // Each path once unmeasured first (a few requests per client), so that
  // no measured path pays for the threads its servers make.
  struct WarmPath {
    const char* name;
    int port;
    const char* target;
    pid_t forwarder;  // the process in between; 0: none
    bool new_connections;
    Run run;
    double cpu_us = 0;  // the forwarder's CPU per request
  };
  std::vector<WarmPath> paths;
  const auto add = [&](const char* name, int port, const char* target,
                       pid_t forwarder, bool new_connections) {
    paths.push_back({name, port, target, forwarder, new_connections, {}});
  };
  const char* const kDirect = "/v1/completions";
  add("direct", upstream.port(), kDirect, 0, false);
  add("direct, new conns", upstream.port(), kDirect, 0, true);
  add("TCP relay (epoll)", relay_port, kDirect, relaying.pid(), false);
  add("TCP relay (threads)", threaded_port, kDirect, threaded.pid(), false);
  add("activator, httplib front", old_front_port, "/bench/llm/v1/completions",
      old_front.pid(), false);
  add("activator, new pod conns", no_reuse_port, "/bench/llm/v1/completions",
      no_reuse.pid(), false);
  add("through the activator", front_port, "/bench/llm/v1/completions",
      forwarding.pid(), false);
  // The first path again, last: what "added" reads when nothing is added
  // (the run's drift and noise).
  add("direct, again", upstream.port(), kDirect, 0, false);
  for (const WarmPath& p : paths) {
    Concurrent(p.port, p.target, clients, 2, p.new_connections);
  }
  int failed = 0;
  for (WarmPath& p : paths) {
    const double cpu0 = p.forwarder != 0 ? ProcessCpu(p.forwarder) : 0;
    p.run = Concurrent(p.port, p.target, clients, requests, p.new_connections);
    if (p.forwarder != 0) {
      p.cpu_us = (ProcessCpu(p.forwarder) - cpu0) * 1e6 /
                 static_cast<double>(std::max<size_t>(1, p.run.total.size()));
    }
    Print(p.name, p.run);
    failed += p.run.failed;
  }
  const Run& d = paths[0].run;
  for (const WarmPath& p : paths) {
    if (&p.run == &d) {
      continue;
    }
    const Run& x = p.run;
    const std::string cpu = p.forwarder != 0
                                ? absl::StrCat("; ", static_cast<int>(p.cpu_us),
                                               " us CPU per request in between")
                                : "";
    std::printf(
        "  added by %-24s ttfb p50 %+.2f p99 %+.2f ms, total p99 %+.2f ms; "
        "%.2fx direct%s\n",
        p.name, Quantile(x.ttfb, 0.5) - Quantile(d.ttfb, 0.5),
        Quantile(x.ttfb, 0.99) - Quantile(d.ttfb, 0.99),
        Quantile(x.total, 0.99) - Quantile(d.total, 0.99),
        (static_cast<double>(x.total.size()) / x.seconds) /
            (static_cast<double>(d.total.size()) / d.seconds),
        cpu.c_str());
  }

  // Idle kept-alive connections: what a front spends while clients keep
  // their connections open between requests (the OpenAI SDKs' pools keep
  // them 5 s), measured over 2 s after one request on each.
  std::printf(
      "idle: %d kept-alive client connections, after one request "
      "each:\n",
      idle);
  for (const WarmPath& p : paths) {
    if (p.forwarder == 0 || p.forwarder == relaying.pid() ||
        p.forwarder == threaded.pid() || p.forwarder == no_reuse.pid()) {
      continue;
    }
    std::vector<int> fds;
    for (int i = 0; i < idle; ++i) {
      const int fd = pilotlight::testutil::ConnectLoopback(p.port);
      const std::string req = "GET /none HTTP/1.1\r\nHost: b\r\n\r\n";
      char buf[1024];
      if (fd < 0 ||
          ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) !=
              static_cast<ssize_t>(req.size()) ||
          ::recv(fd, buf, sizeof buf, 0) <= 0) {
        ++failed;
      }
      fds.push_back(fd);
    }
    absl::SleepFor(absl::Milliseconds(200));
    const double cpu0 = ProcessCpu(p.forwarder);
    absl::SleepFor(absl::Seconds(2));
    const double cpu = ProcessCpu(p.forwarder) - cpu0;
    std::printf("  %-24s %6.0f ms of CPU in 2 s idle (%.0f %% of a core)\n",
                p.name, cpu * 1e3, cpu * 50);
    for (const int fd : fds) {
      ::close(fd);
    }
  }

  // Twice each: the first burst finds no idle connection threads beyond
  // the servers' minimum (made as it comes), the second finds those the
  // first made.
  for (const char* round : {"first burst", "second burst"}) {
    std::printf("%s: %d requests at once, each on a new connection:\n", round,
                burst);
    const double self0 = ProcessCpu(::getpid());
    const Run bd =
        Concurrent(upstream.port(), "/v1/completions", burst, 1, true);
    const double self1 = ProcessCpu(::getpid());
    Print("direct", bd);
    const Run br = Concurrent(relay_port, "/v1/completions", burst, 1, true);
    Print("through a TCP relay", br);
    const double self1r = ProcessCpu(::getpid());
    const double front0 = ProcessCpu(forwarding.pid());
    const Run ba =
        Concurrent(front_port, "/bench/llm/v1/completions", burst, 1, true);
    const double self2 = ProcessCpu(::getpid());
    const double front1 = ProcessCpu(forwarding.pid());
    Print("through the activator", ba);
    // CPU per request: the clients and the model server (this process),
    // and the activator's process.
    std::printf(
        "  added: total p99 %+.2f ms by the relay, %+.2f ms by the activator "
        "| CPU per request: clients + model server %.0f us direct, %.0f us "
        "through the activator; activator %.0f us\n",
        Quantile(br.total, 0.99) - Quantile(bd.total, 0.99),
        Quantile(ba.total, 0.99) - Quantile(bd.total, 0.99),
        (self1 - self0) * 1e6 / burst, (self2 - self1r) * 1e6 / burst,
        (front1 - front0) * 1e6 / burst);
    failed += bd.failed + br.failed + ba.failed;
  }
  return failed == 0 ? 0 : 1;
}
