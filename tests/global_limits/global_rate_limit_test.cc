// GlobalRateLimit against Debian's redis-server started by the test: leases
// across two limiters on one key, the script reloaded after SCRIPT FLUSH, the
// local share while Redis is down and the way back, a Redis that never
// answers, and prompt destruction. Real time: bounds are loose, loops
// bounded.

#include "src/global_limits/global_rate_limit.h"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/clock.h"
#include "tests/global_limits/global_limit_testing.h"
#include "tests/redis_limits/trickle_proxy.h"
#include "tests/testing/eventually.h"
#include "tests/testing/redis_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::Make;
using ::resilience::testing::Offer;
using ::resilience::testing::Settings;
using ::resilience::testing::RedisServer;
using Mode = GlobalRateLimiter::Mode;

class GlobalRateLimitTest : public testing::RedisTest {};

// Two servers on one key share its rate: over 2 s at 3x the rate, together
// about rate x 2 s + burst.
TEST_F(GlobalRateLimitTest, TwoLimitersShareOneBucket) {
  // A round trip may take long on a loaded machine; this test is about the
  // sharing, not about timeouts.
  GlobalThrottleSettings settings = Settings(redis_->port(), 100, 20, "share");
  settings.timeout = absl::Seconds(1);
  auto a = Make(settings);
  auto b = Make(settings);
  ASSERT_TRUE(Eventually([&] {
    return a->limiter().mode() == Mode::kGlobal && b->limiter().mode() == Mode::kGlobal;
  }));
  // Their first leases took a token each; let the bucket fill again.
  absl::SleepFor(absl::Milliseconds(400));
  std::atomic<int64_t> admitted_b{0};
  std::thread other([&] { admitted_b = Offer(*b, 100, absl::Seconds(2)); });
  const int64_t admitted_a = Offer(*a, 200, absl::Seconds(2));
  other.join();
  const int64_t total = admitted_a + admitted_b.load();
  EXPECT_GE(total, 200 * 0.85) << admitted_a << " + " << admitted_b.load();
  EXPECT_LE(total, 220 * 1.05) << admitted_a << " + " << admitted_b.load();
  EXPECT_GT(admitted_b.load(), 0);
  EXPECT_EQ(a->limiter().Stats().admitted_local, 0);
  EXPECT_EQ(a->limiter().Stats().lease_failures, 0);
  // The bucket is a hash at the key, without a lifetime (volatile-*
  // eviction never picks it).
  EXPECT_EQ(redis_->Command({"TYPE", "share"}).value_or(""), "hash");
  EXPECT_EQ(redis_->Command({"PTTL", "share"}).value_or(""), "-1");
}

// Redis forgetting the script (a restart, SCRIPT FLUSH) costs nothing: the
// lease runs it with EVAL and goes on.
TEST_F(GlobalRateLimitTest, ScriptFlushedIsLoadedAgain) {
  auto a = Make(Settings(redis_->port(), 1000, 1000, "flush"));
  ASSERT_TRUE(Eventually([&] { return a->limiter().mode() == Mode::kGlobal; }));
  ASSERT_TRUE(redis_->Command({"SCRIPT", "FLUSH"}).ok());
  const int64_t leases = a->limiter().Stats().leases;
  Offer(*a, 500, absl::Milliseconds(500));
  EXPECT_GT(a->limiter().Stats().leases, leases);
  EXPECT_EQ(a->limiter().Stats().lease_failures, 0);
  EXPECT_EQ(a->limiter().mode(), Mode::kGlobal);
}

// Redis killed: one fallback to the local share (rate / expectedReplicas
// here, or what was observed), calls still answered at once; Redis back:
// the global limit within a few seconds.
TEST_F(GlobalRateLimitTest, LocalShareWhileRedisIsDownThenBack) {
  auto a = Make(Settings(redis_->port(), 100, 10, "outage"));
  ASSERT_TRUE(Eventually([&] { return a->limiter().mode() == Mode::kGlobal; }));
  Offer(*a, 50, absl::Milliseconds(500));
  redis_->Kill();
  // The next lease fails: the local share takes over.
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Eventually([&] {
    a->TryAcquire(nullptr);
    return a->limiter().mode() == Mode::kLocal;
  }, absl::Seconds(3)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  // Never blocks: 1000 decisions in well under a second.
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < 1000; ++i) a->TryAcquire(nullptr);
  EXPECT_LT(absl::Now() - t0, absl::Milliseconds(500));
  const int64_t local = Offer(*a, 200, absl::Seconds(1));
  EXPECT_GT(local, 0);
  EXPECT_LE(local, a->limiter().local_rate() * 1.0 + 20);
  EXPECT_EQ(a->limiter().Stats().fallbacks, 1);  // one transition, however many failures
  ASSERT_TRUE(redis_->Restart().ok());
  const absl::Time back = absl::Now();
  ASSERT_TRUE(Eventually([&] {
    a->TryAcquire(nullptr);
    return a->limiter().mode() == Mode::kGlobal;
  }, absl::Seconds(5)));
  EXPECT_LT(absl::Now() - back, absl::Seconds(3));
  EXPECT_EQ(a->limiter().Stats().recoveries, 1);
}

// Without Redis at all: Create() returns at once, the limiter admits its
// share, and destruction is prompt.
TEST(GlobalRateLimitNoRedisTest, NoRedisNeverBlocks) {
  absl::StatusOr<int> port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  GlobalThrottleSettings s = Settings(*port, 100, 10, "none");
  s.timeout = absl::Seconds(2);  // what a blocking client could wait
  const absl::Time t0 = absl::Now();
  auto a = Make(s);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));
  EXPECT_TRUE(a->TryAcquire(nullptr));  // the starting share
  ASSERT_TRUE(Eventually([&] { return a->limiter().mode() == Mode::kLocal; }));
  EXPECT_NEAR(a->limiter().local_rate(), 50, 0.01);
  const absl::Time t1 = absl::Now();
  a.reset();
  EXPECT_LT(absl::Now() - t1, absl::Seconds(1));
}

// A "Redis" that accepts connections and never answers: each round trip
// times out (a failure), and destroying the limit breaks the one in progress
// off instead of waiting for its timeout.
TEST(GlobalRateLimitNoRedisTest, SilentRedisTimesOutAndStopsPromptly) {
  int port = 0;
  absl::StatusOr<int> listening = testing::ListenOnLoopback(&port);
  ASSERT_TRUE(listening.ok()) << listening.status();
  const int fd = *listening;
  GlobalThrottleSettings s = Settings(port, 100, 10, "silent");
  s.timeout = absl::Seconds(2);
  auto a = Make(s);
  absl::SleepFor(absl::Milliseconds(200));  // connected (backlog), SCRIPT LOAD pending
  EXPECT_EQ(a->limiter().mode(), Mode::kStarting);  // not failed: it is still waiting
  EXPECT_TRUE(a->TryAcquire(nullptr));
  const absl::Time t0 = absl::Now();
  a.reset();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));  // not the 2 s timeout
  close(fd);
}

}  // namespace
}  // namespace resilience
