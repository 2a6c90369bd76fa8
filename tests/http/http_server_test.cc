// The connection pool of the activator's (and the stand-in's) HTTP server:
// when the process can make no more threads (a pod's pids limit), the pool
// stops growing, says so once, and every connection is still served by the
// threads there are -- nothing throws into the server's accept loop.
#include "controller/http/http_server.h"

#include <atomic>
#include <cerrno>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pilotlight::http {
namespace {

TEST(GrowingPoolTest, ThreadsThatCannotBeMadeCapThePoolAndWorkStillRuns) {
  std::atomic<int> made{0};
  std::vector<std::string> warnings;
  GrowingPool pool(
      1, 100,
      [&](std::function<void()> fn) {
        if (made.load() >= 3) {
          throw std::system_error(EAGAIN, std::generic_category(),
                                  "Resource temporarily unavailable");
        }
        ++made;
        return std::thread(std::move(fn));
      },
      [&](const std::string& m) { warnings.push_back(m); });
  std::atomic<bool> release{false};
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) {
    pool.enqueue([&] {
      while (!release.load()) {
        absl::SleepFor(absl::Milliseconds(1));
      }
      ++done;
    });
  }
  EXPECT_EQ(made.load(), 3);
  ASSERT_EQ(warnings.size(), 1U);  // once, not per connection
  EXPECT_THAT(warnings[0], ::testing::HasSubstr("cannot start connection "
                                                "thread 4"));
  release = true;
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (done.load() < 10 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(done.load(), 10);
  pool.shutdown();
}

}  // namespace
}  // namespace pilotlight::http
