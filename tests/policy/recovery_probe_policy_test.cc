// File: tests/policy/recovery_probe_policy_test.cc
//
// breaker.recoveryProbe: read into BreakerSettings, the defaults, the
// breaker it makes (health_gated), and the errors (path and value named).

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/policy/policy_table.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

TEST(RecoveryProbePolicyTest, OffUnlessSet) {
  PolicyTable set = MustParse(Entry(R"("breaker": {"threeState": {}})"));
  EXPECT_FALSE(set.Find("/s.S/M").policy->breaker.recovery_probe.has_value());
}

TEST(RecoveryProbePolicyTest, DefaultsWhenEmpty) {
  PolicyTable set = MustParse(Entry(R"("breaker": {"threeState": {}, "recoveryProbe": {}})"));
  const BreakerSettings& b = set.Find("/s.S/M").policy->breaker;
  ASSERT_TRUE(b.recovery_probe.has_value());
  EXPECT_EQ(b.recovery_probe->health_service, "");
  EXPECT_EQ(b.recovery_probe->interval, absl::Milliseconds(250));
  EXPECT_EQ(b.recovery_probe->timeout, absl::Seconds(1));
}

TEST(RecoveryProbePolicyTest, ReadsEveryFieldAndGatesTheBreaker) {
  PolicyTable set = MustParse(Entry(
      R"("breaker": {"threeState": {}, "recoveryProbe": {"health": "cache.v1.CacheService",)"
      R"( "interval": "0.5s", "timeout": "0.2s"}})"));
  const BreakerSettings& b = set.Find("/s.S/M").policy->breaker;
  ASSERT_TRUE(b.recovery_probe.has_value());
  EXPECT_EQ(b.recovery_probe->health_service, "cache.v1.CacheService");
  EXPECT_EQ(b.recovery_probe->interval, absl::Milliseconds(500));
  EXPECT_EQ(b.recovery_probe->timeout, absl::Milliseconds(200));
  EXPECT_TRUE(set.warnings().empty());
  SimulatedClock clock;
  std::unique_ptr<Breaker> breaker = CreateBreaker(b, clock, 1);
  auto* three_state = dynamic_cast<ThreeStateBreaker*>(breaker.get());
  ASSERT_NE(three_state, nullptr);
  EXPECT_TRUE(three_state->options().health_gated);
}

TEST(RecoveryProbePolicyTest, ErrorsNameThePathAndTheValue) {
  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "recoveryProbe": {}})")),
            "methodConfig[0].breaker.recoveryProbe: needs methodConfig[0].breaker.threeState "
            "(the SRE breaker has no open state for a health probe to end), got sre");
  EXPECT_THAT(
      ErrorOf(Entry(R"("breaker": {"threeState": {}, "recoveryProbe": {"interval": "0s"}})")),
      HasSubstr("methodConfig[0].breaker.recoveryProbe.interval: must be in [1ms, 1h]"));
  EXPECT_THAT(
      ErrorOf(Entry(R"("breaker": {"threeState": {}, "recoveryProbe": {"timeout": "7200s"}})")),
      HasSubstr("methodConfig[0].breaker.recoveryProbe.timeout: must be in [1ms, 1h]"));
  EXPECT_EQ(ErrorOf(Entry(
                R"("breaker": {"threeState": {}, "recoveryProbe": {"health": "a\u0001b"}})")),
            "methodConfig[0].breaker.recoveryProbe.health: must be a service name of at most "
            "200 printable ASCII bytes, got \"a\\x01b\"");
  EXPECT_THAT(ErrorOf(Entry(R"("breaker": {"threeState": {}, "recoveryProbe": {"helth": ""}})")),
              HasSubstr("helth"));
}

}  // namespace
}  // namespace resilience
