// UpstreamPool on socket pairs: what it hands out, what it refuses to, and
// that an idle connection is closed when its time is up (so the pod at the
// other end sees it end).
#include "controller/http/upstream_pool.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace pilotlight::http {
namespace {

// A connected pair: [0] the pool's end, [1] the pod's.
std::array<int, 2> Pair() {
  std::array<int, 2> fds{-1, -1};
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds.data()), 0);
  return fds;
}

// Whether the pod's end sees its peer closed within `wait` (an end, or a
// reset when the closed end had bytes unread).
bool PeerClosed(int pod_end, absl::Duration wait) {
  pollfd p{pod_end, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(wait))) <= 0) {
    return false;
  }
  char c = 0;
  const ssize_t n = ::recv(pod_end, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

TEST(UpstreamPoolTest, HandsOutTheLastGivenForThatPodOnly) {
  UpstreamPool pool;
  const auto a = Pair();
  const auto b = Pair();
  pool.Give("10.0.0.1:8000", a[0]);
  pool.Give("10.0.0.1:8000", b[0]);
  EXPECT_EQ(pool.idle(), 2U);
  EXPECT_EQ(pool.Take("10.0.0.2:8000"), -1);
  EXPECT_EQ(pool.Take("10.0.0.1:8000"), b[0]);
  EXPECT_EQ(pool.Take("10.0.0.1:8000"), a[0]);
  EXPECT_EQ(pool.Take("10.0.0.1:8000"), -1);
  EXPECT_EQ(pool.idle(), 0U);
  for (const int fd : {a[0], a[1], b[0], b[1]}) {
    ::close(fd);
  }
}

// A pod that closed its end, or sent bytes no request asked for, is not
// handed out: the connection is closed instead.
TEST(UpstreamPoolTest, AConnectionThePodClosedOrWroteOnIsNotHandedOut) {
  UpstreamPool pool;
  const auto closed = Pair();
  const auto wrote = Pair();
  const auto good = Pair();
  pool.Give("pod:1", good[0]);
  pool.Give("pod:1", closed[0]);
  pool.Give("pod:1", wrote[0]);
  ::close(closed[1]);
  ASSERT_EQ(::send(wrote[1], "HTTP/1.1 408", 12, 0), 12);
  EXPECT_EQ(pool.Take("pod:1"), good[0]);
  EXPECT_EQ(pool.idle(), 0U);
  EXPECT_TRUE(PeerClosed(wrote[1], absl::Seconds(1)));
  ::close(good[0]);
  ::close(good[1]);
  ::close(wrote[1]);
}

TEST(UpstreamPoolTest, AnIdleConnectionIsClosedWhenItsTimeIsUp) {
  UpstreamPool pool({.idle = absl::Milliseconds(100)});
  const auto c = Pair();
  pool.Give("pod:1", c[0]);
  EXPECT_FALSE(PeerClosed(c[1], absl::Milliseconds(20)));
  // Closed by the sweeper, with no request to notice: a pod that stops
  // is not kept waiting on it.
  EXPECT_TRUE(PeerClosed(c[1], absl::Seconds(5)));
  EXPECT_EQ(pool.idle(), 0U);
  EXPECT_EQ(pool.Take("pod:1"), -1);
  ::close(c[1]);
}

TEST(UpstreamPoolTest, AtMostMaxIdlePerPodAndForgetClosesAPodsOwn) {
  UpstreamPool pool({.idle = absl::Seconds(60), .max_idle_per_pod = 2});
  std::array<std::array<int, 2>, 4> c;
  for (auto& p : c) {
    p = Pair();
  }
  pool.Give("pod:1", c[0][0]);
  pool.Give("pod:1", c[1][0]);
  pool.Give("pod:1", c[2][0]);  // over the bound: closed
  pool.Give("pod:2", c[3][0]);
  EXPECT_EQ(pool.idle(), 3U);
  EXPECT_TRUE(PeerClosed(c[2][1], absl::Seconds(1)));
  pool.Forget("pod:1");
  EXPECT_EQ(pool.idle(), 1U);
  EXPECT_TRUE(PeerClosed(c[0][1], absl::Seconds(1)));
  EXPECT_TRUE(PeerClosed(c[1][1], absl::Seconds(1)));
  EXPECT_FALSE(PeerClosed(c[3][1], absl::Milliseconds(10)));
  for (const auto& p : c) {
    ::close(p[1]);
  }
}

TEST(UpstreamPoolTest, OffKeepsNothing) {
  UpstreamPool pool({.idle = absl::ZeroDuration()});
  EXPECT_FALSE(pool.enabled());
  const auto c = Pair();
  pool.Give("pod:1", c[0]);
  EXPECT_EQ(pool.idle(), 0U);
  EXPECT_EQ(pool.Take("pod:1"), -1);
  EXPECT_TRUE(PeerClosed(c[1], absl::Seconds(1)));
  ::close(c[1]);
}

}  // namespace
}  // namespace pilotlight::http
