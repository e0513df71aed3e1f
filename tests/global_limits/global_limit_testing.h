// File: tests/global_limits/global_limit_testing.h
//
// What the tests of GlobalRateLimit against a real redis-server share: the
// settings of a limit on a loopback Redis, its creation (leasing through
// RedisFleetLimitBackend, src/redis_limits), and a paced load.

#ifndef GRPC_RESILIENCE_TESTS_GLOBAL_LIMITS_GLOBAL_LIMIT_TESTING_H_
#define GRPC_RESILIENCE_TESTS_GLOBAL_LIMITS_GLOBAL_LIMIT_TESTING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "src/core/clock.h"
#include "src/global_limits/global_rate_limit.h"
#include "src/redis_limits/redis_fleet_limit_backend.h"
#include "tests/testing/redis_server.h"

namespace resilience::testing {

// A fixture with a redis-server of its own per test (REDIS_SERVER_PATH, the
// test target's definition), on a free loopback port.
class RedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto redis = RedisServer::Start(REDIS_SERVER_PATH);
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = *std::move(redis);
  }
  std::unique_ptr<RedisServer> redis_;
};

// A limit of `rate`/`burst` on `key` of 127.0.0.1:`port`, 2 expected
// replicas, a timeout of 200 ms.
inline GlobalThrottleSettings Settings(int port, double rate, int64_t burst,
                                       const std::string& key) {
  GlobalThrottleSettings s;
  s.host = "127.0.0.1";
  s.port = port;
  s.key = key;
  s.rate_per_second = rate;
  s.burst = burst;
  s.expected_replicas = 2;
  s.timeout = absl::Milliseconds(200);
  s.path = "methodConfig[0].throttle.global";
  return s;
}

inline std::unique_ptr<GlobalRateLimit> Make(const GlobalThrottleSettings& s) {
  auto made = GlobalRateLimit::Create(s, "scope", Clock::Real(), RedisFleetLimitBackend());
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

// Offers calls at about `per_second` to `limit` for `d`; the admitted ones.
inline int64_t Offer(GlobalRateLimit& limit, double per_second, absl::Duration d) {
  const absl::Time start = absl::Now();
  int64_t admitted = 0;
  for (int64_t i = 0;; ++i) {
    const absl::Time at = start + absl::Seconds(static_cast<double>(i) / per_second);
    if (at >= start + d) break;
    const absl::Duration wait = at - absl::Now();
    if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
    absl::Duration retry_after;
    if (limit.TryAcquire(&retry_after)) ++admitted;
  }
  return admitted;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_GLOBAL_LIMITS_GLOBAL_LIMIT_TESTING_H_
