// ClientWatch over real loopback TCP connections: a registration fires once
// when its client hangs up, never while it is connected, never after the
// registration is gone, and not for a connection that is not this
// process's.
#include "controller/http/client_watch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/loopback.h"

namespace pilotlight::http {
namespace {

// A connected pair on loopback: `client` and the accepted `server` side,
// with the server side's ConnectionId as cpp-httplib would write it.
struct Pair {
  int client = -1;
  int server = -1;
  ConnectionId id;
  Pair() {
    int port = 0;
    const int listener = testutil::ListenLoopback(port);
    client = testutil::ConnectLoopback(port);
    EXPECT_GE(client, 0);
    server = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    sockaddr_in c{};
    socklen_t len = sizeof(c);
    ::getsockname(client, reinterpret_cast<sockaddr*>(&c), &len);
    id = {"127.0.0.1", ntohs(c.sin_port), port};
  }
  ~Pair() {
    if (client >= 0) {
      ::close(client);
    }
    ::close(server);
  }
  void HangUp() {
    ::close(client);
    client = -1;
  }
};

TEST(ClientWatchTest, FiresOnceWhenTheClientHangsUp) {
  ClientWatch watch;
  Pair p;
  std::atomic<int> gone{0};
  auto reg = watch.Watch(p.id, [&] { ++gone; });
  watch.PassNow();
  EXPECT_EQ(gone.load(), 0);  // connected: nothing
  // Bytes the client sends are not a hang-up (and are left unread).
  ASSERT_EQ(::send(p.client, "x", 1, 0), 1);
  watch.PassNow();
  EXPECT_EQ(gone.load(), 0);
  p.HangUp();
  watch.PassNow();
  EXPECT_EQ(gone.load(), 1);
  watch.PassNow();
  EXPECT_EQ(gone.load(), 1);  // once
  char c = 0;
  EXPECT_EQ(::recv(p.server, &c, 1, 0), 1);  // the byte is still there
}

TEST(ClientWatchTest, NothingAfterTheRegistrationIsGone) {
  ClientWatch watch;
  Pair p;
  std::atomic<int> gone{0};
  auto reg = watch.Watch(p.id, [&] { ++gone; });
  watch.PassNow();
  EXPECT_EQ(watch.watched(), 1);
  reg.reset();
  EXPECT_EQ(watch.watched(), 0);
  p.HangUp();
  watch.PassNow();
  EXPECT_EQ(gone.load(), 0);
}

TEST(ClientWatchTest, AConnectionThatIsNotOursNeverFires) {
  ClientWatch watch;
  std::atomic<int> gone{0};
  auto reg = watch.Watch({"192.0.2.1", 1, 1}, [&] { ++gone; });
  watch.PassNow();
  watch.PassNow();
  EXPECT_EQ(gone.load(), 0);
}

// A socket the caller gives (the activator's own front knows it) is polled
// as it is: a Unix socket pair, which the scan could never match (it has
// no port), fires when its peer hangs up.
TEST(ClientWatchTest, ASocketGivenIsWatchedWithoutAScan) {
  ClientWatch watch;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::atomic<int> gone{0};
  auto reg = watch.WatchSocket(sv[0], [&] { ++gone; });
  watch.PassNow();
  EXPECT_EQ(gone.load(), 0);  // connected: nothing
  ::close(sv[1]);
  watch.PassNow();
  EXPECT_EQ(gone.load(), 1);
  reg.reset();
  ::close(sv[0]);
}

// The thread: a young registration is matched after a pass, then fires.
TEST(ClientWatchTest, TheThreadNoticesWithinAFewPasses) {
  ClientWatch watch(absl::Milliseconds(20));
  watch.Start();
  Pair p;
  std::atomic<int> gone{0};
  auto reg = watch.Watch(p.id, [&] { ++gone; });
  p.HangUp();
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (gone.load() == 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(gone.load(), 1);
  watch.Stop();
}

}  // namespace
}  // namespace pilotlight::http
