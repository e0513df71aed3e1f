// throttle.global in the policy file: what loads, the defaults, and the
// refusals naming path and value; whatever loads, GlobalRateLimiter takes.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/limits/global_rate_limiter.h"
#include "src/policy/global_throttle_policy.h"
#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

// A whole file, with the cache service's methods linked.
absl::StatusOr<PolicyTable> LoadFile(const std::string& json) {
  static const MethodCatalog* const methods =
      new MethodCatalog({{"cache.v1.CacheService", "Get"}, {"cache.v1.CacheService", "Store"}});
  PolicyTable::LoadOptions options;
  options.methods = methods;
  return PolicyTable::FromJsonString(json, options);
}

absl::StatusOr<PolicyTable> LoadGlobal(const std::string& global) {
  return LoadFile(
      R"({"methodConfig":[{"name":[{"service":"cache.v1.CacheService"}],"throttle":{"global":)" +
      global + "}}]}");
}

TEST(GlobalThrottlePolicyTest, LoadsWithDefaults) {
  absl::StatusOr<PolicyTable> set =
      LoadGlobal(R"({"redis":"127.0.0.1:6380","ratePerSecond":250,"expectedReplicas":3})");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE(set->warnings().empty());
  const PolicyTable::Match match = set->Find("/cache.v1.CacheService/Get");
  ASSERT_NE(match.policy, nullptr);
  ASSERT_TRUE(match.policy->throttle.has_value());
  ASSERT_TRUE(match.policy->throttle->global.has_value());
  const GlobalThrottleSettings& g = *match.policy->throttle->global;
  EXPECT_EQ(g.host, "127.0.0.1");
  EXPECT_EQ(g.port, 6380);
  EXPECT_EQ(g.key, "");  // the scope's name at run time
  EXPECT_EQ(g.rate_per_second, 250);
  EXPECT_EQ(g.burst, 250);
  EXPECT_EQ(g.expected_replicas, 3);
  EXPECT_EQ(g.lease_interval, absl::Milliseconds(100));
  EXPECT_EQ(g.timeout, absl::Milliseconds(200));
  // No local rate limit: only the global one.
  EXPECT_EQ(match.policy->throttle->rate_per_second, 0);
  EXPECT_EQ(DefaultGlobalThrottleKey("cache.v1.CacheService/"),
            "grpc_resilience:cache.v1.CacheService/");
  EXPECT_EQ(DefaultGlobalThrottleKey(""), "grpc_resilience:*");
}

TEST(GlobalThrottlePolicyTest, LoadsEveryField) {
  absl::StatusOr<PolicyTable> set = LoadGlobal(
      R"({"redis":"redis.internal:6379","key":"fleet:cache","ratePerSecond":0.5,"burst":3,)"
      R"("expectedReplicas":10,"leaseInterval":"0.05s","timeout":"1s"})");
  ASSERT_TRUE(set.ok()) << set.status();
  const GlobalThrottleSettings& g =
      *set->Find("/cache.v1.CacheService/Get").policy->throttle->global;
  EXPECT_EQ(g.host, "redis.internal");
  EXPECT_EQ(g.key, "fleet:cache");
  EXPECT_EQ(g.burst, 3);
  EXPECT_EQ(g.lease_interval, absl::Milliseconds(50));
  EXPECT_EQ(g.timeout, absl::Seconds(1));
}

TEST(GlobalThrottlePolicyTest, RefusalsNamePathAndValue) {
  const std::string p = "methodConfig[0].throttle.global.";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"ratePerSecond":1,"expectedReplicas":1})", p + "redis: required"},
      {R"({"redis":"localhost","ratePerSecond":1,"expectedReplicas":1})",
       p + "redis: must be \"host:port\""},
      {R"({"redis":"localhost:0","ratePerSecond":1,"expectedReplicas":1})",
       "got \"localhost:0\""},
      {R"({"redis":"local host:1","ratePerSecond":1,"expectedReplicas":1})",
       "got \"local host:1\""},
      {R"({"redis":"h:70000","ratePerSecond":1,"expectedReplicas":1})", "got \"h:70000\""},
      {R"({"redis":"h:1","expectedReplicas":1})", p + "ratePerSecond: required"},
      {R"({"redis":"h:1","ratePerSecond":1})", p + "expectedReplicas: required"},
      {R"({"redis":"h:1","ratePerSecond":2e9,"expectedReplicas":1})",
       p + "ratePerSecond: must be in [1e-3, 1e9], got 2e+09"},
      {R"({"redis":"h:1","ratePerSecond":10,"burst":0,"expectedReplicas":1})",
       p + "burst: must be in [1, 1e9], got 0"},
      {R"({"redis":"h:1","ratePerSecond":10,"expectedReplicas":0})",
       p + "expectedReplicas: must be in [1, 10000], got 0"},
      {R"({"redis":"h:1","ratePerSecond":10,"expectedReplicas":1,"leaseInterval":"11s"})",
       p + "leaseInterval: must be in [1ms, 10s], got 11s"},
      {R"({"redis":"h:1","ratePerSecond":10,"expectedReplicas":1,"timeout":"0s"})",
       p + "timeout: must be in [1ms, 10s], got 0"},
      {R"({"redis":"h:1","key":"a b","ratePerSecond":10,"expectedReplicas":1})",
       p + "key: must be 1 to 256 printable ASCII characters without spaces, got \"a b\""},
      {R"({"redis":"h:1","ratePerSecond":10,"expectedReplicas":1,"lease":"1s"})", "lease"},
  };
  for (const auto& [global, expected] : cases) {
    absl::StatusOr<PolicyTable> set = LoadGlobal(global);
    ASSERT_FALSE(set.ok()) << global;
    EXPECT_THAT(set.status().message(), HasSubstr(expected)) << global;
  }
}

// Whatever the loader accepts, the limiter accepts: a sweep over the
// bounds.
TEST(GlobalThrottlePolicyTest, LoaderAndLimiterAgree) {
  SimulatedClock clock;
  for (const char* rate : {"0.001", "0.5", "1", "1000", "1e9"}) {
    for (const char* replicas : {"1", "3", "10000"}) {
      for (const char* interval : {"0.001s", "0.1s", "10s"}) {
        absl::StatusOr<PolicyTable> set =
            LoadGlobal(absl::StrCat(R"({"redis":"h:1","ratePerSecond":)", rate,
                                    R"(,"expectedReplicas":)", replicas,
                                    R"(,"leaseInterval":")", interval, "\"}"));
        ASSERT_TRUE(set.ok()) << set.status();
        const GlobalThrottleSettings& g =
            *set->Find("/cache.v1.CacheService/Get").policy->throttle->global;
        auto limiter = GlobalRateLimiter::Create(LimiterOptions(g), clock);
        ASSERT_TRUE(limiter.ok()) << limiter.status();
        EXPECT_TRUE((*limiter)->TryAcquire());  // the starting local share holds a token
      }
    }
  }
}


// Two scopes on one key with different rates: one bucket refilled with
// whichever numbers leased last, and the slower scope starved beside the
// faster one. A load error naming both paths, the key and both values.
TEST(GlobalThrottleKeysTest, OneKeyWithTwoRatesIsALoadError) {
  absl::StatusOr<PolicyTable> set = LoadFile(
      R"({"methodConfig":[
        {"name":[{"service":"cache.v1.CacheService","method":"Store"}],
         "throttle":{"global":{"redis":"127.0.0.1:6379","key":"shared","ratePerSecond":1000,
                               "expectedReplicas":1}}},
        {"name":[{"service":"cache.v1.CacheService","method":"Get"}],
         "throttle":{"global":{"redis":"127.0.0.1:6379","key":"shared","ratePerSecond":10,
                               "expectedReplicas":1}}}]})");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(set.status().message(),
              HasSubstr("methodConfig[1].throttle.global: key \"shared\" at 127.0.0.1:6379 is also "
                        "the bucket of methodConfig[0].throttle.global, with ratePerSecond 1000 "
                        "and burst 1000; here ratePerSecond 10 and burst 10"));
}

// A key written as another scope's default key is the same bucket too.
TEST(GlobalThrottleKeysTest, ExplicitKeyEqualToAnotherScopesDefaultKeyIsChecked) {
  absl::StatusOr<PolicyTable> set = LoadFile(
      R"({"methodConfig":[
        {"name":[{"service":"cache.v1.CacheService"}],
         "throttle":{"global":{"redis":"127.0.0.1:6379","ratePerSecond":100,"expectedReplicas":1}}},
        {"name":[{}],
         "throttle":{"global":{"redis":"127.0.0.1:6379","key":"grpc_resilience:cache.v1.CacheService/",
                               "ratePerSecond":100,"burst":5,"expectedReplicas":1}}}]})");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr("burst 100; here ratePerSecond 100 and burst 5"));
}

// Sharing with the same numbers is one budget for both scopes, as
// documented; the same key on another Redis is another bucket.
TEST(GlobalThrottleKeysTest, SameNumbersOrAnotherRedisLoad) {
  absl::StatusOr<PolicyTable> set = LoadFile(
      R"({"methodConfig":[
        {"name":[{"service":"cache.v1.CacheService","method":"Store"},
                 {"service":"cache.v1.CacheService","method":"Get"}],
         "throttle":{"global":{"redis":"127.0.0.1:6379","key":"shared","ratePerSecond":50,
                               "expectedReplicas":1}}},
        {"name":[{}],
         "throttle":{"global":{"redis":"127.0.0.1:6380","key":"shared","ratePerSecond":10,
                               "expectedReplicas":1}}}]})");
  EXPECT_TRUE(set.ok()) << set.status();
}

}  // namespace
}  // namespace resilience
