// File: tests/policy/endpoint_breaker_policy_test.cc
//
// breaker.endpoints: the per-endpoint breakers' settings, their defaults
// and their errors (path and value named).

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/policy_table.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

TEST(EndpointBreakerPolicyTest, OnByDefaultWithTheDefaults) {
  PolicyTable set = MustParse(Entry(R"("breaker": {"threeState": {}})"));
  const BreakerSettings& b = set.Find("/s.S/M").policy->breaker;
  EXPECT_TRUE(b.per_endpoint);
  EXPECT_EQ(b.endpoints.failing_share, 1.0);
  EXPECT_EQ(b.endpoints.max_endpoints, 64);
  EXPECT_EQ(b.endpoints.recent, absl::Seconds(30));
}

TEST(EndpointBreakerPolicyTest, ReadsEveryField) {
  PolicyTable set = MustParse(Entry(
      R"("breaker": {"sre": {}, "endpoints": {"enabled": false, "failingShare": 0.5,)"
      R"( "maxEndpoints": 8, "recent": "5s"}})"));
  const BreakerSettings& b = set.Find("/s.S/M").policy->breaker;
  EXPECT_FALSE(b.per_endpoint);
  EXPECT_EQ(b.endpoints.failing_share, 0.5);
  EXPECT_EQ(b.endpoints.max_endpoints, 8);
  EXPECT_EQ(b.endpoints.recent, absl::Seconds(5));
  EXPECT_TRUE(set.warnings().empty());
}

TEST(EndpointBreakerPolicyTest, ErrorsNameThePathAndTheValue) {
  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "endpoints": {"failingShare": 0}})")),
            "methodConfig[0].breaker.endpoints.failingShare: must be in (0, 1], got 0");
  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "endpoints": {"failingShare": 1.5}})")),
            "methodConfig[0].breaker.endpoints.failingShare: must be in (0, 1], got 1.5");
  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "endpoints": {"maxEndpoints": 0}})")),
            "methodConfig[0].breaker.endpoints.maxEndpoints: must be in [1, 1024], got 0");
  EXPECT_THAT(ErrorOf(Entry(R"("breaker": {"sre": {}, "endpoints": {"recent": "0s"}})")),
              HasSubstr("methodConfig[0].breaker.endpoints.recent: must be in [1ms, 24h]"));
  EXPECT_THAT(ErrorOf(Entry(R"("breaker": {"sre": {}, "endpoints": {"enabled": "yes"}})")),
              HasSubstr("methodConfig[0].breaker.endpoints.enabled"));
}

}  // namespace
}  // namespace resilience
