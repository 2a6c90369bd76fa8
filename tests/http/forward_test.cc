// Forward's upstream HTTP/1.1 client against a scripted pod on loopback:
// each test's pod answers with exact bytes, in pieces a few ms apart, so
// the body's framing (Content-Length, chunked split anywhere, until close,
// interim 1xx) and each failure are met as a real socket delivers them.
#include "controller/http/forward.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/loopback.h"

namespace pilotlight::http {
namespace {

using ::testing::HasSubstr;

// Accepts one connection, reads the request (headers and Content-Length
// body), then sends `pieces` 5 ms apart and closes (or, with
// `hold_open`, waits for the peer to close first).
class ScriptedPod {
 public:
  explicit ScriptedPod(std::vector<std::string> pieces, bool hold_open = false)
      : pieces_(std::move(pieces)), hold_open_(hold_open) {
    listen_ = testutil::ListenLoopback(port_, 4);
    EXPECT_GE(listen_, 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedPod() {
    ::shutdown(listen_, SHUT_RDWR);
    thread_.join();
    ::close(listen_);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // What the pod received, once it has answered.
  std::string request() {
    answered_.wait(false);
    return request_;
  }

 private:
  void Serve() {
    const int fd = ::accept(listen_, nullptr, nullptr);
    if (fd < 0) {
      answered_ = true;
      answered_.notify_all();
      return;
    }
    char b[4096];
    size_t want = std::string::npos;
    while (request_.size() < want) {
      const ssize_t n = ::recv(fd, b, sizeof(b), 0);
      if (n <= 0) {
        break;
      }
      request_.append(b, static_cast<size_t>(n));
      const size_t end = request_.find("\r\n\r\n");
      if (end != std::string::npos && want == std::string::npos) {
        const size_t cl = request_.find("Content-Length: ");
        want = end + 4 +
               (cl == std::string::npos ? 0
                                        : std::stoul(request_.substr(cl + 16)));
      }
    }
    answered_ = true;
    answered_.notify_all();
    for (const std::string& p : pieces_) {
      ::send(fd, p.data(), p.size(), MSG_NOSIGNAL);
      absl::SleepFor(absl::Milliseconds(5));
    }
    if (hold_open_) {
      while (::recv(fd, b, sizeof(b), 0) > 0) {
      }
    }
    ::close(fd);
  }

  std::vector<std::string> pieces_;
  bool hold_open_;
  int listen_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
  std::atomic<bool> answered_{false};
};

httplib::Request Post(std::string body) {
  httplib::Request r;
  r.method = "POST";
  r.body = std::move(body);
  r.remote_addr = "10.0.0.7";
  r.headers.emplace("Content-Type", "application/json");
  r.headers.emplace("Authorization", "Bearer k");
  r.headers.emplace("Connection", "keep-alive");  // hop-by-hop: dropped
  r.headers.emplace("Expect", "100-continue");    // answered already
  return r;
}

ForwardTimeouts Short() {
  ForwardTimeouts t;
  t.connect = absl::Seconds(1);
  t.response_start = absl::Seconds(2);
  t.idle = absl::Milliseconds(300);
  t.total = absl::Seconds(5);
  return t;
}

// Pumps `f` to its end; the body as the client would receive it.
struct Pumped {
  std::string body;
  bool done = false;  // sink.done() was called
  bool ok = true;     // the last Pump's answer
  int writes = 0;
};
Pumped PumpAll(Forward& f, bool client_gone_after_first = false) {
  Pumped p;
  httplib::DataSink sink;
  sink.write = [&](const char* d, size_t n) {
    if (client_gone_after_first && p.writes > 0) {
      return false;
    }
    p.body.append(d, n);
    ++p.writes;
    return true;
  };
  sink.done = [&] { p.done = true; };
  sink.is_writable = [] { return true; };
  while (!p.done) {
    if (!f.Pump(sink)) {
      p.ok = false;
      break;
    }
  }
  return p;
}

TEST(ForwardTest, SendsTheRequestWithoutHopByHopHeaders) {
  ScriptedPod pod({"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"});
  Forward f(Post(R"({"prompt":"hi"})"), "/v1/completions?x=1", pod.address(),
            Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  const std::string req = pod.request();
  EXPECT_THAT(req, HasSubstr("POST /v1/completions?x=1 HTTP/1.1\r\n"));
  EXPECT_THAT(req, HasSubstr("Authorization: Bearer k\r\n"));
  EXPECT_THAT(req, HasSubstr("X-Forwarded-For: 10.0.0.7\r\n"));
  EXPECT_THAT(req, HasSubstr("Content-Length: 15\r\n"));
  EXPECT_THAT(req, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(req, ::testing::Not(HasSubstr("keep-alive")));
  EXPECT_THAT(req, ::testing::Not(HasSubstr("100-continue")));
  EXPECT_THAT(req, ::testing::EndsWith("\r\n\r\n{\"prompt\":\"hi\"}"));
  const Pumped p = PumpAll(f);
  EXPECT_TRUE(p.ok);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.body, "ok");
}

TEST(ForwardTest, ContentLengthSplitAcrossReadsAndHeadersWithIt) {
  ScriptedPod pod({"HTTP/1.1 201 Created\r\nContent-",
                   "Length: 11\r\nX-A:  b \r", "\n\r\nhello", " world"});
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  EXPECT_EQ(f.status(), 201);
  EXPECT_EQ(f.headers().find("X-A")->second, "b");
  const Pumped p = PumpAll(f);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.body, "hello world");
  EXPECT_GE(p.writes, 2);  // each piece passed on as it came
}

TEST(ForwardTest, ChunkedBodyIsDecodedWhereverTheReadsSplitIt) {
  ScriptedPod pod(
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
       "Content-Type: text/event-stream\r\n\r\n5\r\nda",
       "ta:\r\n", "b;ext=1\r", "\n 0123456", "789\r\n0\r\nX-Trailer: t",
       "\r\n\r\n"});
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  const Pumped p = PumpAll(f);
  EXPECT_TRUE(p.ok);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.body, "data: 0123456789");
}

TEST(ForwardTest, NoLengthReadsUntilClose) {
  ScriptedPod pod({"HTTP/1.0 200 OK\r\n\r\nab", "cd"});
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  const Pumped p = PumpAll(f);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.body, "abcd");
}

TEST(ForwardTest, InterimResponsesAreSkipped) {
  ScriptedPod pod({"HTTP/1.1 100 Continue\r\n\r\n",
                   "HTTP/1.1 204 No Content\r\nX-B: c\r\n\r\n"});
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  EXPECT_EQ(f.status(), 204);
  const Pumped p = PumpAll(f);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.body, "");
}

TEST(ForwardTest, ClosedMidBodyEndsWithoutDone) {
  ScriptedPod pod({"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart"});
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  const Pumped p = PumpAll(f);
  EXPECT_FALSE(p.ok);
  EXPECT_FALSE(p.done);
  EXPECT_EQ(p.body, "part");
  EXPECT_THAT(f.error(), HasSubstr("mid-body"));
}

TEST(ForwardTest, MalformedChunkSizeEndsTheResponse) {
  ScriptedPod pod(
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
       "zz\r\nab\r\n0\r\n\r\n"});
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  const Pumped p = PumpAll(f);
  EXPECT_FALSE(p.ok);
  EXPECT_THAT(f.error(), HasSubstr("chunk size"));
}

TEST(ForwardTest, IdleStreamTimesOut) {
  // Headers and one chunk, then silence with the connection open.
  ScriptedPod pod({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "2\r\nhi\r\n"},
                  /*hold_open=*/true);
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  const absl::Time t0 = absl::Now();
  const Pumped p = PumpAll(f);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.body, "hi");
  EXPECT_THAT(f.error(), HasSubstr("no bytes for 300ms"));
  EXPECT_LT(absl::Now() - t0, absl::Seconds(2));
}

TEST(ForwardTest, NoResponseWithinResponseStartTimesOut) {
  ScriptedPod pod({}, /*hold_open=*/true);
  ForwardTimeouts t = Short();
  t.response_start = absl::Milliseconds(200);
  Forward f(Post("{}"), "/", pod.address(), t);
  EXPECT_EQ(f.WaitForResponse(), Forward::Start::kTimedOut);
  EXPECT_THAT(f.error(), HasSubstr("no response within 200ms"));
}

TEST(ForwardTest, ClosedBeforeAnswerIsAFailureAndGarbageIsToo) {
  {
    ScriptedPod pod({});
    Forward f(Post("{}"), "/", pod.address(), Short());
    EXPECT_EQ(f.WaitForResponse(), Forward::Start::kFailed);
    EXPECT_THAT(f.error(), HasSubstr("closed before a response"));
  }
  {
    ScriptedPod pod({"SSH-2.0-OpenSSH\r\n\r\n"});
    Forward f(Post("{}"), "/", pod.address(), Short());
    EXPECT_EQ(f.WaitForResponse(), Forward::Start::kFailed);
    EXPECT_THAT(f.error(), HasSubstr("not an HTTP/1.x status line"));
  }
}

TEST(ForwardTest, RefusedIsAConnectFailure) {
  // A port just freed: nothing listens there.
  int port = 0;
  {
    ScriptedPod pod({});
    port = std::stoi(pod.address().substr(10));
    // Connect once so the pod's accept returns and it can stop.
    Forward f(Post("{}"), "/", pod.address(), Short());
    (void)f.WaitForResponse();
  }
  Forward f(Post("{}"), "/", absl::StrCat("127.0.0.1:", port), Short());
  EXPECT_EQ(f.WaitForResponse(), Forward::Start::kConnectFailed);
  EXPECT_THAT(f.error(), HasSubstr("refused"));
}

TEST(ForwardTest, ClientGoneCancelsTheUpstream) {
  ScriptedPod pod({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "2\r\nhi\r\n",
                   "2\r\nho\r\n"},
                  /*hold_open=*/true);
  Forward f(Post("{}"), "/", pod.address(), Short());
  ASSERT_EQ(f.WaitForResponse(), Forward::Start::kResponded) << f.error();
  const absl::Time t0 = absl::Now();
  const Pumped p = PumpAll(f, /*client_gone_after_first=*/true);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.body, "hi");
  EXPECT_THAT(f.error(), HasSubstr("client went away"));
  // The pod saw its connection close (its hold_open read ended): the
  // destructor below would otherwise wait for nothing.
  EXPECT_LT(absl::Now() - t0, absl::Milliseconds(250));
}

// A pod that keeps its connections: it answers the requests it gets, in
// order across its connections, with `answers`; an answer with `close`
// ends its connection after its bytes (no bytes: the pod closing an idle
// connection just as a request came).
struct Answer {
  std::string bytes;
  bool close = false;
};
class KeptAlivePod {
 public:
  explicit KeptAlivePod(std::vector<Answer> answers)
      : answers_(std::move(answers)) {
    listen_ = testutil::ListenLoopback(port_, 4);
    EXPECT_GE(listen_, 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~KeptAlivePod() {
    stopping_ = true;
    ::shutdown(listen_, SHUT_RDWR);
    if (const int fd = conn_.load(); fd >= 0) {
      ::shutdown(fd, SHUT_RDWR);
    }
    thread_.join();
    ::close(listen_);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  int connections() const { return connections_; }
  // The requests received, each whole.
  std::vector<std::string> requests() {
    const std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    size_t next = 0;
    while (!stopping_) {
      const int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) {
        return;
      }
      ++connections_;
      conn_ = fd;
      std::string in;
      char b[4096];
      for (bool open = true; open;) {
        const size_t end = in.find("\r\n\r\n");
        if (end == std::string::npos) {
          const ssize_t n = ::recv(fd, b, sizeof(b), 0);
          if (n <= 0) {
            break;
          }
          in.append(b, static_cast<size_t>(n));
          continue;
        }
        const size_t cl = in.find("Content-Length: ");
        const size_t want = end + 4 +
                            (cl == std::string::npos || cl > end
                                 ? 0
                                 : std::stoul(in.substr(cl + 16)));
        if (in.size() < want) {
          const ssize_t n = ::recv(fd, b, sizeof(b), 0);
          if (n <= 0) {
            break;
          }
          in.append(b, static_cast<size_t>(n));
          continue;
        }
        {
          const std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(in.substr(0, want));
        }
        in.erase(0, want);
        const Answer a = next < answers_.size() ? answers_[next] : Answer{};
        ++next;
        ::send(fd, a.bytes.data(), a.bytes.size(), MSG_NOSIGNAL);
        open = !a.close && next <= answers_.size();
      }
      conn_ = -1;
      ::close(fd);
    }
  }

  const std::vector<Answer> answers_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> conn_{-1};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

constexpr char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// One request through a new Forward on `pool`; its body, or why not.
struct Sent {
  Forward::Start start;
  std::string body;
  bool reused;
  bool stale;
};
Sent SendOn(UpstreamPool& pool, const std::string& address) {
  Forward f(Post("{}"), "/", address, Short(), &pool);
  Sent s{f.WaitForResponse(), "", false, false};
  if (s.start == Forward::Start::kResponded) {
    const Pumped p = PumpAll(f);
    s.body = p.done ? p.body : "(cut short)";
  }
  s.reused = f.reused();
  s.stale = f.stale();
  return s;
}

TEST(ForwardTest, AConnectionReadWholeCarriesTheNextRequest) {
  KeptAlivePod pod({{kOk},
                    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "2\r\nhi\r\n0\r\n\r\n"},
                    {"HTTP/1.1 204 No Content\r\n\r\n"},
                    {kOk}});
  UpstreamPool pool;
  std::vector<std::string> bodies;
  for (int i = 0; i < 4; ++i) {
    const Sent s = SendOn(pool, pod.address());
    ASSERT_EQ(s.start, Forward::Start::kResponded) << i;
    EXPECT_EQ(s.reused, i > 0) << i;
    EXPECT_FALSE(s.stale);
    bodies.push_back(s.body);
  }
  EXPECT_EQ(bodies, (std::vector<std::string>{"ok", "hi", "", "ok"}));
  EXPECT_EQ(pod.connections(), 1);
  EXPECT_EQ(pool.idle(), 1U);
  // Kept alive by HTTP/1.1's default: no `Connection: close` asked.
  for (const std::string& req : pod.requests()) {
    EXPECT_THAT(req, ::testing::Not(HasSubstr("Connection")));
  }
}

TEST(ForwardTest, AKeptConnectionClosedUnansweredIsTriedOnceOnANewOne) {
  KeptAlivePod pod({{kOk}, {"", /*close=*/true}, {kOk}});
  UpstreamPool pool;
  ASSERT_EQ(SendOn(pool, pod.address()).body, "ok");
  const Sent s = SendOn(pool, pod.address());
  EXPECT_EQ(s.start, Forward::Start::kResponded);
  EXPECT_EQ(s.body, "ok");
  EXPECT_TRUE(s.reused);
  EXPECT_TRUE(s.stale);
  EXPECT_EQ(pod.connections(), 2);
  EXPECT_EQ(pod.requests().size(), 3U);  // the one closed on, again
}

TEST(ForwardTest, AKeptConnectionBrokenAfterAByteIsNotRetried) {
  KeptAlivePod pod({{kOk}, {"HTTP/1.1 200 OK\r\nContent-", /*close=*/true}});
  UpstreamPool pool;
  ASSERT_EQ(SendOn(pool, pod.address()).body, "ok");
  const Sent s = SendOn(pool, pod.address());
  EXPECT_EQ(s.start, Forward::Start::kFailed);
  EXPECT_TRUE(s.reused);
  EXPECT_FALSE(s.stale);
  EXPECT_EQ(pod.connections(), 1);
  EXPECT_EQ(pod.requests().size(), 2U);
}

// A connection goes back only when the next response on it cannot be
// mistaken: read whole, nothing past it, the pod not closing it.
TEST(ForwardTest, OnlyAConnectionThatCanCarryAnotherGoesBack) {
  struct Case {
    const char* what;
    Answer answer;
    size_t idle_after;
  };
  for (const Case& c : std::vector<Case>{
           {"kept", {kOk}, 1},
           {"Connection: close",
            {"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n"
             "Content-Length: 2\r\n\r\nok"},
            0},
           {"HTTP/1.0", {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"}, 0},
           {"bytes past the length",
            {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1"},
            0},
           {"until close", {"HTTP/1.1 200 OK\r\n\r\nok", true}, 0}}) {
    KeptAlivePod pod({c.answer});
    UpstreamPool pool;
    const Sent s = SendOn(pool, pod.address());
    EXPECT_EQ(s.start, Forward::Start::kResponded) << c.what;
    EXPECT_EQ(s.body, "ok") << c.what;
    EXPECT_EQ(pool.idle(), c.idle_after) << c.what;
  }
}

TEST(ForwardTest, WithoutAPoolEachRequestHasItsOwnConnection) {
  KeptAlivePod pod({{kOk}, {kOk}});
  UpstreamPool off({.idle = absl::ZeroDuration()});
  for (int i = 0; i < 2; ++i) {
    const Sent s = SendOn(off, pod.address());
    EXPECT_EQ(s.body, "ok");
    EXPECT_FALSE(s.reused);
  }
  EXPECT_EQ(pod.connections(), 2);
  EXPECT_THAT(pod.requests()[0], HasSubstr("Connection: close\r\n"));
}

}  // namespace
}  // namespace pilotlight::http
