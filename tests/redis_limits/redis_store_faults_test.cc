// GlobalRateLimit against what a real redis-server (started by the test) may
// hold or do: garbage in the bucket's hash, a timestamp a clock step away
// from Redis's TIME, the key evicted by a Redis shared with a cache, a
// Redis that trickles its replies, one that never answers. The fleet limit
// must neither stop admitting nor admit more than the rate plus one burst
// per lost key, and every repair or fallback is counted and logged. Real
// time: bounds are loose, loops bounded.

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/global_limits/global_limit_testing.h"
#include "tests/redis_limits/trickle_proxy.h"
#include "tests/testing/eventually.h"
#include "tests/testing/redis_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::Make;
using ::resilience::testing::Offer;
using ::resilience::testing::RedisServer;
using ::resilience::testing::Settings;
using ::testing::HasSubstr;
using ::testing::Not;
using Mode = GlobalRateLimiter::Mode;

class RedisStoreFaultsTest : public ::testing::Test {
 protected:
  void StartRedis(RedisServer::Options options = {}) {
    auto redis = RedisServer::Start(REDIS_SERVER_PATH, std::move(options));
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = *std::move(redis);
  }
  // Redis's TIME in microseconds.
  int64_t RedisMicros() {
    // TIME is an array: Command() gives its first element only, so ask Lua.
    absl::StatusOr<std::string> t = redis_->Command(
        {"EVAL", "local t = redis.call('TIME') return t[1] * 1000000 + t[2]", "0"});
    EXPECT_TRUE(t.ok()) << t.status();
    int64_t us = 0;
    EXPECT_TRUE(t.ok() && absl::SimpleAtoi(*t, &us)) << (t.ok() ? *t : "");
    return us;
  }
  std::unique_ptr<RedisServer> redis_;
};

// A limit of 50/s with a burst of 10, in use, loaded at 100/s for a while.
std::unique_ptr<GlobalRateLimit> Loaded(int port, const std::string& key) {
  GlobalThrottleSettings s = Settings(port, 50, 10, key);
  s.expected_replicas = 1;
  s.timeout = absl::Seconds(1);  // a loaded machine: this is not about timeouts
  auto limit = Make(s);
  EXPECT_TRUE(Eventually([&] { return limit->limiter().mode() == Mode::kGlobal; }));
  Offer(*limit, 100, absl::Milliseconds(300));
  return limit;
}

// Whatever the hash's tokens field holds (here -inf, NaN, a huge negative
// number, text), the bucket goes on refilling: about the rate is admitted
// the next second, from leases, and the repair is counted and logged.
TEST_F(RedisStoreFaultsTest, GarbageTokensAreClampedAndTheFleetKeepsAdmitting) {
  StartRedis();
  for (const std::string value : {"-inf", "nan", "-1e300", "garbage"}) {
    SCOPED_TRACE(value);
    const std::string key = absl::StrCat("garbage:", value);
    ::testing::internal::CaptureStderr();
    auto limit = Loaded(redis_->port(), key);
    ASSERT_TRUE(redis_->Command({"HSET", key, "tokens", value}).ok());
    const int64_t admitted = Offer(*limit, 100, absl::Seconds(1));
    const std::string log = ::testing::internal::GetCapturedStderr();
    std::printf("tokens=%s: admitted %lld in 1 s (rate 50/s)\n", value.c_str(),
                static_cast<long long>(admitted));
    EXPECT_GE(admitted, 35) << "of 50 expected";
    EXPECT_LE(admitted, 50 + 10 + 5 + 5);
    EXPECT_EQ(limit->limiter().mode(), Mode::kGlobal);
    EXPECT_EQ(limit->limiter().Stats().admitted_local, 0);
    EXPECT_EQ(limit->limiter().Stats().bad_values, 1);
    EXPECT_THAT(log, HasSubstr(absl::StrCat("global rate limit '", key,
                                            "' at 127.0.0.1:", redis_->port())));
    EXPECT_THAT(log, HasSubstr("bucket held a value out of range"));
  }
}

// A key of another type (a string here) would fail every lease with
// WRONGTYPE: it is replaced by an empty bucket, counted and logged.
TEST_F(RedisStoreFaultsTest, KeyOfAnotherTypeIsReplaced) {
  StartRedis();
  auto limit = Loaded(redis_->port(), "string");
  ASSERT_TRUE(redis_->Command({"SET", "string", "not a bucket"}).ok());
  const int64_t admitted = Offer(*limit, 100, absl::Seconds(1));
  EXPECT_GE(admitted, 35) << "of 50 expected";
  EXPECT_LE(admitted, 50 + 10 + 5 + 5);
  EXPECT_EQ(limit->limiter().Stats().bad_values, 1);
  EXPECT_EQ(limit->limiter().Stats().lease_failures, 0);
  EXPECT_EQ(redis_->Command({"TYPE", "string"}).value_or(""), "hash");
}

// +inf tokens (or any number above the burst) is a full bucket, no more.
TEST_F(RedisStoreFaultsTest, TooManyTokensAreClampedToTheBurst) {
  StartRedis();
  auto limit = Loaded(redis_->port(), "inf");
  ASSERT_TRUE(redis_->Command({"HSET", "inf", "tokens", "inf"}).ok());
  const int64_t admitted = Offer(*limit, 200, absl::Seconds(1));
  // rate x 1 s + burst + a lease held, and slack for a slow machine.
  EXPECT_LE(admitted, 50 + 10 + 5 + 5);
  EXPECT_GE(admitted, 35);
}

// The key's timestamp 60 s ahead of Redis's TIME (a failover to a replica
// whose clock lags): the bucket refills from Redis's now instead of waiting
// a minute, and the step is counted and logged.
TEST_F(RedisStoreFaultsTest, TimestampAheadOfRedisTimeIsSurvived) {
  StartRedis();
  auto limit = Loaded(redis_->port(), "ahead");
  const int64_t ahead = RedisMicros() + 60'000'000;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(redis_->Command({"HSET", "ahead", "tokens", "0", "us", absl::StrCat(ahead)}).ok());
  const int64_t admitted = Offer(*limit, 100, absl::Seconds(1));
  const std::string log = ::testing::internal::GetCapturedStderr();
  std::printf("timestamp 60 s ahead: admitted %lld in 1 s (rate 50/s)\n",
              static_cast<long long>(admitted));
  EXPECT_GE(admitted, 35) << "of 50 expected";
  EXPECT_LE(admitted, 50 + 10 + 5 + 5);
  EXPECT_EQ(limit->limiter().mode(), Mode::kGlobal);
  EXPECT_EQ(limit->limiter().Stats().clock_steps, 1);
  EXPECT_THAT(log, HasSubstr("ahead of the store's clock"));
}

// The timestamp an hour behind (the clock stepped forward): a full bucket
// at most, not an hour's worth of tokens.
TEST_F(RedisStoreFaultsTest, TimestampFarBehindRefillsAtMostTheBurst) {
  StartRedis();
  auto limit = Loaded(redis_->port(), "behind");
  const int64_t behind = RedisMicros() - 3600'000'000LL;
  ASSERT_TRUE(redis_->Command({"HSET", "behind", "tokens", "0", "us", absl::StrCat(behind)}).ok());
  const int64_t admitted = Offer(*limit, 200, absl::Seconds(1));
  EXPECT_LE(admitted, 50 + 10 + 5 + 5);
  EXPECT_GE(admitted, 35);
}

// A Redis shared with a cache: maxmemory with volatile-ttl, a writer
// filling it with keys that live an hour. The bucket's key must not be the
// one evicted again and again (each time a full bucket): over 3 s at 4x the
// rate, the fleet admits at most rate x 3 s + burst.
TEST_F(RedisStoreFaultsTest, EvictionUnderVolatileTtlDoesNotRefillTheBucket) {
  StartRedis({.password = "", .args = {"--maxmemory", "3mb", "--maxmemory-policy", "volatile-ttl"}});
  GlobalThrottleSettings s = Settings(redis_->port(), 50, 50, "evicted");
  s.expected_replicas = 1;
  s.timeout = absl::Seconds(1);
  auto limit = Make(s);
  ASSERT_TRUE(Eventually([&] { return limit->limiter().mode() == Mode::kGlobal; }));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> written{0};
  std::thread cache([&] {
    redisContext* c = redisConnectWithTimeout("127.0.0.1", redis_->port(), timeval{1, 0});
    if (c == nullptr || c->err != 0) return;
    redisSetTimeout(c, timeval{1, 0});
    const std::string value(1000, 'v');
    for (int64_t i = 0; !stop && i < 10'000'000; i += 50) {
      for (int64_t j = i; j < i + 50; ++j) {
        const std::string key = absl::StrCat("cache:", j);
        const char* argv[] = {"SET", key.c_str(), value.c_str(), "EX", "3600"};
        const size_t lens[] = {3, key.size(), value.size(), 2, 4};
        redisAppendCommandArgv(c, 5, argv, lens);
      }
      for (int j = 0; j < 50; ++j) {
        void* reply = nullptr;
        if (redisGetReply(c, &reply) != REDIS_OK) break;
        freeReplyObject(reply);
      }
      written += 50;
    }
    redisFree(c);
  });
  // Full: Redis evicts.
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<std::string> info = redis_->Command({"INFO", "stats"});
    return info.ok() && !absl::StrContains(*info, "evicted_keys:0\r");
  }, absl::Seconds(10)));
  const int64_t admitted = Offer(*limit, 200, absl::Seconds(3));
  stop = true;
  cache.join();
  std::printf("volatile-ttl eviction: admitted %lld in 3 s (rate x 3 s + burst = 200), %lld "
              "cache keys written\n",
              static_cast<long long>(admitted), static_cast<long long>(written.load()));
  EXPECT_LE(admitted, 50 * 3 + 50 + 5 + 10) << written.load() << " cache keys written";
  EXPECT_GE(admitted, 50 * 3 * 0.7);
  EXPECT_EQ(limit->limiter().Stats().keys_lost, 0);
  EXPECT_EQ(limit->limiter().Stats().lease_failures, 0);
}

// A key lost all the same (DEL here; allkeys-* eviction, FLUSHALL, a Redis
// restarted empty): the next lease finds it missing, though this server had
// leased from it: counted, logged, and one extra burst at most.
TEST_F(RedisStoreFaultsTest, LostKeyIsCountedLoggedAndCostsOneBurstAtMost) {
  StartRedis();
  auto limit = Loaded(redis_->port(), "lost");
  Offer(*limit, 100, absl::Milliseconds(500));  // the bucket is dry
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(redis_->Command({"DEL", "lost"}).ok());
  const int64_t admitted = Offer(*limit, 200, absl::Seconds(1));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_LE(admitted, 50 + 10 + 5 + 5);  // rate x 1 s + one burst + a lease
  EXPECT_GE(admitted, 35);
  EXPECT_EQ(limit->limiter().Stats().keys_lost, 1);
  EXPECT_THAT(log, HasSubstr("bucket lost"));
  // The bucket has no lifetime: volatile-* eviction never picks it.
  EXPECT_EQ(redis_->Command({"PTTL", "lost"}).value_or(""), "-1");
}

// A Redis that answers a byte every 20 ms: every read succeeds, no round
// trip finishes within the 200 ms timeout. The round trip's deadline is the
// timeout: the server falls back to its local share (counted, logged as a
// timeout), not to the trickle of leases.
TEST_F(RedisStoreFaultsTest, TricklingRedisFallsBackToTheLocalShare) {
  StartRedis();
  auto proxy = testing::TrickleProxy::Start(redis_->port(), absl::Milliseconds(20));
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  GlobalThrottleSettings s = Settings((*proxy)->port(), 50, 10, "trickle");
  s.expected_replicas = 1;
  ::testing::internal::CaptureStderr();
  auto limit = Make(s);
  // Connect, then SCRIPT LOAD's reply (47 bytes, about 1 s) times out.
  const bool local = Eventually([&] { return limit->limiter().mode() == Mode::kLocal; },
                                absl::Seconds(3));
  const int64_t admitted = Offer(*limit, 50, absl::Seconds(1));
  const std::string log = ::testing::internal::GetCapturedStderr();
  std::printf("trickling Redis: admitted %lld of 50 offered in 1 s\n",
              static_cast<long long>(admitted));
  EXPECT_TRUE(local) << static_cast<int>(limit->limiter().mode());
  EXPECT_GE(admitted, 35) << "of the local share of 50/s";
  EXPECT_GE(limit->limiter().Stats().lease_failures, 1);
  EXPECT_THAT(log, HasSubstr("timed out after 200ms"));
  limit.reset();
}

// A Redis that never answers: the fallback's line says it timed out, after
// how long, and where (not "Resource temporarily unavailable").
TEST_F(RedisStoreFaultsTest, TimeoutIsLoggedAsATimeoutWithTheAddress) {
  int port = 0;
  absl::StatusOr<int> listening = testing::ListenOnLoopback(&port);
  ASSERT_TRUE(listening.ok()) << listening.status();
  const int fd = *listening;
  GlobalThrottleSettings s = Settings(port, 100, 10, "silent");
  s.timeout = absl::Milliseconds(100);
  ::testing::internal::CaptureStderr();
  auto limit = Make(s);
  const bool local = Eventually([&] { return limit->limiter().mode() == Mode::kLocal; },
                                absl::Seconds(3));
  limit.reset();
  const std::string log = ::testing::internal::GetCapturedStderr();
  close(fd);
  EXPECT_TRUE(local);
  EXPECT_THAT(log, HasSubstr(absl::StrCat("timed out after 100ms (127.0.0.1:", port, ")")));
  EXPECT_THAT(log, Not(HasSubstr("Resource temporarily unavailable")));
}

}  // namespace
}  // namespace resilience
