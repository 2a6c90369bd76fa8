// FrontServer, the activator's HTTP/1.1 server, over real loopback
// sockets: cpp-httplib's client for ordinary use, raw bytes for the
// protocol's corners (100-continue, chunked request bodies, pipelining,
// HTTP/1.0, malformed and oversized requests, HEAD, a stream cut short)
// and for what the activator relies on (each chunk sent as it is given,
// idle connections closed at once when the server stops).
#include "controller/http/front_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
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
using ::testing::Not;
using ::testing::StartsWith;

// What the handler saw of one request.
struct Seen {
  std::string method, target, path, body, header;
  int remote_port = 0;
};

class FrontServerTest : public ::testing::Test {
 protected:
  void Start(FrontServerOptions o = {},
             FrontServer::Handler handler = nullptr) {
    if (handler == nullptr) {
      handler = [this](const httplib::Request& req, httplib::Response& res,
                       int) {
        {
          const std::lock_guard<std::mutex> lock(mu_);
          seen_.push_back({req.method, req.target, req.path, req.body,
                           req.get_header_value("X-Test"), req.remote_port});
        }
        res.status = 200;
        res.set_header("X-Seen", req.method);
        res.set_content(absl::StrCat("echo:", req.body), "text/plain");
      };
    }
    server_ = std::make_unique<FrontServer>(
        o, std::move(handler),
        [this](const httplib::Request&, uint64_t bytes,
               httplib::Response& res) {
          too_large_ = bytes;
          res.set_content("{\"error\": \"too large\"}", "application/json");
        });
    port_ = *server_->Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { server_->Serve(); });
    while (!server_->running()) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      thread_.join();
    }
  }

  // A raw connection to the server.
  int Connect() const {
    const int fd = testutil::ConnectLoopback(port_);
    EXPECT_GE(fd, 0);
    return fd;
  }
  static void Send(int fd, const std::string& s) {
    ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(s.size()));
  }
  // Reads until `marker` has come `times` times, the peer closes, or 5 s.
  // `closed` says whether it closed.
  static std::string ReadUntil(int fd, const std::string& marker, int times = 1,
                               bool* closed = nullptr) {
    std::string got;
    const absl::Time until = absl::Now() + absl::Seconds(5);
    auto count = [&] {
      int n = 0;
      for (size_t at = got.find(marker); at != std::string::npos;
           at = got.find(marker, at + marker.size())) {
        ++n;
      }
      return n;
    };
    while (absl::Now() < until && (marker.empty() || count() < times)) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) {
        continue;
      }
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        if (closed != nullptr) {
          *closed = true;
        }
        break;
      }
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  // A server that keeps idle connections 60 s, and a connection to it left
  // idle after one request answered and kept alive.
  int StartWithIdleConnection() {
    FrontServerOptions o;
    o.keep_alive = absl::Seconds(60);
    Start(o);
    const int fd = Connect();
    Send(fd, "GET /a HTTP/1.1\r\n\r\n");
    const std::string got = ReadUntil(fd, "echo:");
    EXPECT_THAT(got, StartsWith("HTTP/1.1 200 OK"));
    EXPECT_THAT(got, Not(HasSubstr("Connection: close")));
    return fd;
  }
  // Whether the server closes `fd` within `within`.
  static bool ClosedWithin(int fd, absl::Duration within) {
    bool closed = false;
    const absl::Time until = absl::Now() + within;
    while (!closed && absl::Now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) {
        char b;
        closed = ::recv(fd, &b, 1, 0) <= 0;
      }
    }
    return closed;
  }

  std::mutex mu_;
  std::vector<Seen> seen_;
  std::atomic<uint64_t> too_large_{0};
  std::unique_ptr<FrontServer> server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(FrontServerTest, ServesRequestsOnOneKeptAliveConnection) {
  Start();
  httplib::Client c("127.0.0.1", port_);
  c.set_keep_alive(true);
  const httplib::Headers h = {{"X-Test", "one"}};
  auto r1 = c.Post("/ns/m/v1/completions?x=1", h, "hello", "application/json");
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->status, 200);
  EXPECT_EQ(r1->body, "echo:hello");
  EXPECT_EQ(r1->get_header_value("X-Seen"), "POST");
  EXPECT_EQ(r1->get_header_value("Content-Type"), "text/plain");
  auto r2 = c.Get("/ns/m/v1/models");
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->body, "echo:");
  const std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(seen_.size(), 2U);
  EXPECT_EQ(seen_[0].method, "POST");
  EXPECT_EQ(seen_[0].target, "/ns/m/v1/completions?x=1");
  EXPECT_EQ(seen_[0].path, "/ns/m/v1/completions");
  EXPECT_EQ(seen_[0].body, "hello");
  EXPECT_EQ(seen_[0].header, "one");
  EXPECT_EQ(seen_[1].method, "GET");
  // One connection for both.
  EXPECT_EQ(seen_[0].remote_port, seen_[1].remote_port);
  EXPECT_GT(seen_[0].remote_port, 0);
}

TEST_F(FrontServerTest, SendsEachChunkAsItIsGiven) {
  std::atomic<bool> first_arrived{false};
  std::atomic<bool> waited_for_client{false};
  Start({}, [&](const httplib::Request&, httplib::Response& res, int) {
    res.status = 200;
    res.set_chunked_content_provider(
        "text/event-stream",
        [&, step = 0](size_t, httplib::DataSink& sink) mutable {
          if (step++ == 0) {
            return sink.write("data: a\n\n", 9);
          }
          // The second chunk only once the client has the first: a server
          // that held chunks back would time out here.
          const absl::Time until = absl::Now() + absl::Seconds(5);
          while (!first_arrived && absl::Now() < until) {
            absl::SleepFor(absl::Milliseconds(1));
          }
          waited_for_client = first_arrived.load();
          sink.write("data: b\n\n", 9);
          sink.done();
          return true;
        });
  });
  httplib::Client c("127.0.0.1", port_);
  std::string body;
  auto r = c.Get("/s", [&](const char* d, size_t n) {
    body.append(d, n);
    first_arrived = true;
    return true;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(body, "data: a\n\ndata: b\n\n");
  EXPECT_TRUE(waited_for_client);
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked");
}

TEST_F(FrontServerTest, ExpectContinueChunkedBodiesAndPipelining) {
  Start();
  const int fd = Connect();
  // 100-continue: the body is sent only after the interim answer.
  Send(fd,
       "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
       "Expect: 100-continue\r\n\r\n");
  EXPECT_EQ(ReadUntil(fd, "\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  Send(fd, "abcde");
  EXPECT_THAT(ReadUntil(fd, "echo:abcde"), StartsWith("HTTP/1.1 200 OK\r\n"));
  // A chunked body, with an extension and a trailer.
  Send(fd,
       "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
  EXPECT_THAT(ReadUntil(fd, "echo:hello world"), HasSubstr("200 OK"));
  // Two requests in one send: two answers, in order.
  Send(fd,
       "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n1"
       "POST /d HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n2");
  const std::string two = ReadUntil(fd, "echo:2");
  EXPECT_LT(two.find("echo:1"), two.find("echo:2"));
  ::close(fd);
  const std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(seen_.size(), 4U);
  EXPECT_EQ(seen_[1].body, "hello world");
  EXPECT_EQ(seen_[3].target, "/d");
}

TEST_F(FrontServerTest, Http10AndConnectionCloseEndTheConnection) {
  Start();
  for (const std::string& request :
       {std::string("GET /a HTTP/1.0\r\n\r\n"),
        std::string("GET /a HTTP/1.1\r\nConnection: close\r\n\r\n")}) {
    const int fd = Connect();
    Send(fd, request);
    bool closed = false;
    const std::string got = ReadUntil(fd, "", 1, &closed);
    EXPECT_THAT(got, HasSubstr("Connection: close\r\n"));
    EXPECT_THAT(got, HasSubstr("echo:"));
    EXPECT_TRUE(closed) << request;
    ::close(fd);
  }
}

TEST_F(FrontServerTest, Http10GetsAStreamWithoutChunksEndedByClose) {
  Start({}, [](const httplib::Request&, httplib::Response& res, int) {
    res.status = 200;
    res.set_chunked_content_provider("text/event-stream",
                                     [](size_t, httplib::DataSink& sink) {
                                       sink.write("data: a\n\n", 9);
                                       sink.done();
                                       return true;
                                     });
  });
  const int fd = Connect();
  Send(fd, "GET /s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  bool closed = false;
  const std::string got = ReadUntil(fd, "", 1, &closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(got, Not(HasSubstr("Transfer-Encoding")));
  EXPECT_THAT(got, HasSubstr("Connection: close\r\n"));
  EXPECT_EQ(got.substr(got.find("\r\n\r\n") + 4), "data: a\n\n");
  ::close(fd);
}

TEST_F(FrontServerTest, Http10KeepAliveIsGrantedWhenAskedFor) {
  Start();
  const int fd = Connect();
  const std::string get = "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  Send(fd, get);
  EXPECT_THAT(ReadUntil(fd, "echo:"), HasSubstr("Connection: keep-alive\r\n"));
  Send(fd, get);  // the same connection, again
  EXPECT_THAT(ReadUntil(fd, "echo:"), StartsWith("HTTP/1.1 200 OK"));
  ::close(fd);
}

TEST_F(FrontServerTest, HeadAnswersWithoutABody) {
  Start();
  const int fd = Connect();
  Send(fd, "HEAD /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
  // The HEAD's answer has a length but no body: the next bytes are the
  // GET's answer.
  const std::string got = ReadUntil(fd, "HTTP/1.1 200", 2);
  const std::string head = got.substr(0, got.find("\r\n\r\n") + 4);
  EXPECT_THAT(head, HasSubstr("Content-Length: 5\r\n"));
  EXPECT_THAT(got.substr(head.size()), StartsWith("HTTP/1.1 200 OK"));
  ::close(fd);
}

TEST_F(FrontServerTest, BadRequestsAreAnsweredAndTheConnectionEnds) {
  FrontServerOptions o;
  o.max_body_bytes = 100;
  o.max_header_bytes = 1024;
  Start(o);
  struct Case {
    std::string request;
    std::string status;
  };
  const std::vector<Case> cases = {
      {"NONSENSE\r\n\r\n", "HTTP/1.1 400 "},
      {"GET /a HTTP/2.0\r\n\r\n", "HTTP/1.1 400 "},
      {"GET /a HTTP/1.1\r\nno colon here\r\n\r\n", "HTTP/1.1 400 "},
      {"POST /a HTTP/1.1\r\nContent-Length: ten\r\n\r\n", "HTTP/1.1 400 "},
      {"POST /a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
       "HTTP/1.1 400 "},
      {"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       "HTTP/1.1 400 "},
      {"POST /a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "HTTP/1.1 501 "},
      {absl::StrCat("GET /a HTTP/1.1\r\nX-Big: ", std::string(2000, 'x'),
                    "\r\n\r\n"),
       "HTTP/1.1 431 "},
      // Over the body limit: answered by the hook, the body never read.
      {"POST /a HTTP/1.1\r\nContent-Length: 101\r\n\r\n", "HTTP/1.1 413 "},
      {"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n",
       "HTTP/1.1 413 "},
  };
  for (const Case& c : cases) {
    const int fd = Connect();
    Send(fd, c.request);
    bool closed = false;
    const std::string got = ReadUntil(fd, "", 1, &closed);
    EXPECT_THAT(got, StartsWith(c.status)) << c.request;
    EXPECT_THAT(got, HasSubstr("Connection: close")) << c.request;
    EXPECT_TRUE(closed) << c.request;
    ::close(fd);
  }
  EXPECT_EQ(too_large_.load(), 101U);  // the chunked one's declared size
  const std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(seen_.empty());  // none reached the handler
}

TEST_F(FrontServerTest, OversizedBodyIsAnsweredByTheHook) {
  FrontServerOptions o;
  o.max_body_bytes = 10;
  Start(o);
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Post("/a", std::string(11, 'x'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->body, "{\"error\": \"too large\"}");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(too_large_.load(), 11U);
}

TEST_F(FrontServerTest, AStreamCutShortEndsWithoutItsLastChunk) {
  Start({}, [](const httplib::Request&, httplib::Response& res, int) {
    res.status = 200;
    res.set_chunked_content_provider(
        "text/event-stream",
        [step = 0](size_t, httplib::DataSink& sink) mutable {
          if (step++ == 0) {
            return sink.write("data: a\n\n", 9);
          }
          return false;  // the pod broke off
        });
  });
  const int fd = Connect();
  Send(fd, "GET /s HTTP/1.1\r\n\r\n");
  bool closed = false;
  const std::string got = ReadUntil(fd, "", 1, &closed);
  EXPECT_TRUE(closed);
  EXPECT_THAT(got, HasSubstr("9\r\ndata: a\n\n\r\n"));
  EXPECT_THAT(got, Not(HasSubstr("0\r\n\r\n")));  // not a complete answer
  ::close(fd);
}

TEST_F(FrontServerTest, KeepAliveEndsAfterMaxRequests) {
  FrontServerOptions o;
  o.keep_alive_max_requests = 2;
  Start(o);
  const int fd = Connect();
  Send(fd,
       "GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\nGET /3 HTTP/1.1\r\n\r\n");
  bool closed = false;
  const std::string got = ReadUntil(fd, "", 1, &closed);
  EXPECT_TRUE(closed);
  const size_t second = got.find("HTTP/1.1 200", 1);
  ASSERT_NE(second, std::string::npos);
  EXPECT_THAT(got.substr(0, second), Not(HasSubstr("Connection: close")));
  EXPECT_THAT(got.substr(second), HasSubstr("Connection: close"));
  EXPECT_EQ(got.find("HTTP/1.1 200", second + 1), std::string::npos);
  ::close(fd);
}

TEST_F(FrontServerTest, StopClosesIdleConnectionsAtOnce) {
  const int fd = StartWithIdleConnection();
  const absl::Time t0 = absl::Now();
  server_->Stop();
  EXPECT_TRUE(ClosedWithin(fd, absl::Seconds(5)));
  EXPECT_LT(absl::Now() - t0, absl::Seconds(2));  // not the 60 s idle time
  thread_.join();
  server_.reset();
  ::close(fd);
}

TEST_F(FrontServerTest, DrainEndsKeptAliveConnectionsAndStillServes) {
  const int idle = StartWithIdleConnection();
  server_->Drain();
  // The idle connection closes at once, not after its 60 s.
  EXPECT_TRUE(ClosedWithin(idle, absl::Seconds(2)));
  ::close(idle);
  // A request still comes in (the Service has not caught up): it is
  // served, and its connection ends with it.
  const int late = Connect();
  Send(late, "GET /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\n\r\n");
  bool closed = false;
  const std::string got = ReadUntil(late, "", 1, &closed);
  EXPECT_THAT(got, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(got, HasSubstr("Connection: close"));
  EXPECT_EQ(got.find("HTTP/1.1", 1), std::string::npos);  // /c not answered
  EXPECT_TRUE(closed);
  ::close(late);
  EXPECT_TRUE(server_->running());  // draining is not stopping
}

}  // namespace
}  // namespace pilotlight::http
