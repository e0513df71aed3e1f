// File: tests/policy/enforcement_policy_test.cc
//
// `enforcement` ("enforce", "shadow", "off") on every enforcing block: read
// into the block's settings, "enforce" when unset, and a bad value named with
// its path.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/policy/policy_table.h"
#include "tests/policy/policy_table_test_util.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

TEST(EnforcementPolicyTest, DefaultsToEnforceEverywhere) {
  PolicyTable set = MustParse(Entry(
      R"("breaker": {"sre": {}}, "bulkhead": {"maxConcurrency": 2},
         "throttle": {"maxConcurrency": 4, "cpu": {"threshold": 0.9},
                      "perCaller": {"key": {"peer": true}, "maxConcurrency": 1}})"));
  const MethodPolicy& p = *set.Find("/s.S/M").policy;
  EXPECT_EQ(p.breaker.enforcement, EnforcementMode::kEnforce);
  EXPECT_EQ(p.bulkhead->enforcement, EnforcementMode::kEnforce);
  EXPECT_EQ(p.throttle->enforcement, EnforcementMode::kEnforce);
  EXPECT_EQ(p.throttle->cpu_enforcement, EnforcementMode::kEnforce);
  EXPECT_EQ(p.throttle->shares_enforcement, EnforcementMode::kEnforce);
  EXPECT_EQ(p.throttle->per_caller->enforcement, EnforcementMode::kEnforce);
}

TEST(EnforcementPolicyTest, ReadsEachBlocksOwnMode) {
  PolicyTable set = MustParse(Entry(
      R"("breaker": {"threeState": {}, "enforcement": "shadow"},
         "bulkhead": {"maxConcurrency": 2, "enforcement": "off"},
         "throttle": {"maxConcurrency": 4, "enforcement": "shadow",
                      "criticalityShares": {"sheddable": 0.4, "enforcement": "off"},
                      "cpu": {"threshold": 0.9, "enforcement": "shadow"},
                      "perCaller": {"key": {"peer": true}, "maxConcurrency": 1,
                                    "enforcement": "off"}})"));
  const MethodPolicy& p = *set.Find("/s.S/M").policy;
  EXPECT_EQ(p.breaker.enforcement, EnforcementMode::kShadow);
  EXPECT_EQ(p.bulkhead->enforcement, EnforcementMode::kOff);
  EXPECT_EQ(p.throttle->enforcement, EnforcementMode::kShadow);
  EXPECT_EQ(p.throttle->shares_enforcement, EnforcementMode::kOff);
  EXPECT_EQ(p.throttle->cpu_enforcement, EnforcementMode::kShadow);
  EXPECT_EQ(p.throttle->per_caller->enforcement, EnforcementMode::kOff);
}

TEST(EnforcementPolicyTest, BadValuesNameThePath) {
  EXPECT_EQ(ErrorOf(Entry(R"("breaker": {"sre": {}, "enforcement": "Shadow"})")),
            "methodConfig[0].breaker.enforcement: must be \"enforce\", \"shadow\" or \"off\", "
            "got \"Shadow\"");
  EXPECT_EQ(ErrorOf(Entry(R"("bulkhead": {"maxConcurrency": 1, "enforcement": "dry-run"})")),
            "methodConfig[0].bulkhead.enforcement: must be \"enforce\", \"shadow\" or \"off\", "
            "got \"dry-run\"");
  EXPECT_THAT(
      ErrorOf(Entry(R"("throttle": {"maxConcurrency": 1, "cpu": {"threshold": 0.5,
                                                              "enforcement": "on"}})")),
      HasSubstr("methodConfig[0].throttle.cpu.enforcement: must be"));
  EXPECT_THAT(ErrorOf(Entry(R"("throttle": {"maxConcurrency": 1, "enforcement": "x"})")),
              HasSubstr("methodConfig[0].throttle.enforcement: must be"));
}

TEST(EnforcementPolicyTest, PerCallerGlobalHasNoModeOfItsOwn) {
  EXPECT_THAT(
      ErrorOf(Entry(R"("throttle": {"perCaller": {"key": {"peer": true},
          "global": {"redis": "127.0.0.1:6379", "ratePerSecond": 10, "expectedReplicas": 2,
                     "enforcement": "shadow"}}})")),
      HasSubstr("methodConfig[0].throttle.perCaller.global.enforcement: not a field of its own"));
}

TEST(EnforcementPolicyTest, NamesRoundTrip) {
  for (EnforcementMode m :
       {EnforcementMode::kEnforce, EnforcementMode::kShadow, EnforcementMode::kOff}) {
    EXPECT_EQ(ParseEnforcementMode(EnforcementModeName(m)), m);
  }
  for (EnforcedPolicy p : {EnforcedPolicy::kBreaker, EnforcedPolicy::kBulkhead,
                           EnforcedPolicy::kThrottle, EnforcedPolicy::kPerCaller,
                           EnforcedPolicy::kCpu, EnforcedPolicy::kGlobal,
                           EnforcedPolicy::kCriticalityShares}) {
    EXPECT_EQ(ParseEnforcedPolicy(EnforcedPolicyName(p)), p);
  }
  EXPECT_EQ(ParseEnforcementMode("ENFORCE"), std::nullopt);
  EXPECT_EQ(ParseEnforcedPolicy(""), std::nullopt);
}

}  // namespace
}  // namespace resilience
