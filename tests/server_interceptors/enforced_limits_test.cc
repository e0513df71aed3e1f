// Each server limit in shadow mode on the simulated clock: a call it would
// reject is reported (kShadowed) and takes nothing from it, so its next
// decision is the one enforce mode would make; off asks nothing. Also the
// packed modes of a scope and the aggregated shadow log.

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "absl/strings/str_cat.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/policy/policy_table.h"
#include "src/server_interceptors/enforced_limits.h"

namespace resilience {
namespace {

using Kind = LimitDecision::Kind;
using ::testing::HasSubstr;

EnforcementModes Throttle(EnforcementMode throttle,
                          EnforcementMode shares = EnforcementMode::kEnforce) {
  EnforcementModes m;
  m.throttle = throttle;
  m.shares = shares;
  return m;
}

TEST(ScopeEnforcementTest, EnforcesUntilSetAndKeepsEachPolicysMode) {
  ScopeEnforcement e;
  EXPECT_TRUE(e.Load().AllEnforced());
  e.Set(EnforcedPolicy::kThrottle, EnforcementMode::kShadow);
  e.Set(EnforcedPolicy::kGlobal, EnforcementMode::kOff);
  e.Set(EnforcedPolicy::kBreaker, EnforcementMode::kOff);  // a client policy: nothing
  const EnforcementModes m = e.Load();
  EXPECT_EQ(m.throttle, EnforcementMode::kShadow);
  EXPECT_EQ(m.global, EnforcementMode::kOff);
  EXPECT_EQ(m.shares, EnforcementMode::kEnforce);
  EXPECT_EQ(m.cpu, EnforcementMode::kEnforce);
  EXPECT_EQ(m.per_caller, EnforcementMode::kEnforce);
  EXPECT_EQ(e.Get(EnforcedPolicy::kThrottle), EnforcementMode::kShadow);
  ThrottleSettings s;
  s.shares_enforcement = EnforcementMode::kShadow;
  s.per_caller = PerCallerSettings{};
  s.per_caller->enforcement = EnforcementMode::kOff;
  e.SetAll(ScopeEnforcement::Of(s));
  EXPECT_EQ(e.Get(EnforcedPolicy::kThrottle), EnforcementMode::kEnforce);
  EXPECT_EQ(e.Get(EnforcedPolicy::kCriticalityShares), EnforcementMode::kShadow);
  EXPECT_EQ(e.Get(EnforcedPolicy::kPerCaller), EnforcementMode::kOff);
}

TEST(ScopeEnforcementTest, AfterAShadowRefusalOnlyTheEnforcingPoliciesJudge) {
  EnforcementModes m;
  m.throttle = EnforcementMode::kShadow;
  m.global = EnforcementMode::kShadow;
  m.cpu = EnforcementMode::kOff;
  m.AfterShadowRefusal();
  EXPECT_EQ(m.throttle, EnforcementMode::kOff);
  EXPECT_EQ(m.global, EnforcementMode::kOff);
  EXPECT_EQ(m.per_caller, EnforcementMode::kEnforce);
}

TEST(EnforcedLimitsTest, ShadowConcurrencyLimitCountsNoRejectedCallInFlight) {
  ScopeLimits limits;
  limits.concurrency = std::make_shared<FixedConcurrencyLimiter>(2);
  const EnforcementModes shadow = Throttle(EnforcementMode::kShadow);
  EXPECT_EQ(EnforcedLimits::Slot(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  EXPECT_EQ(EnforcedLimits::Slot(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  const LimitDecision third = EnforcedLimits::Slot(limits, shadow, Criticality::kCritical);
  EXPECT_EQ(third.kind, Kind::kShadowed);
  EXPECT_EQ(third.by, EnforcedPolicy::kThrottle);
  EXPECT_EQ(limits.concurrency->in_flight(), 2);  // the third holds nothing
  // Enforce decides the same on the same state.
  EXPECT_EQ(EnforcedLimits::Slot(limits, Throttle(EnforcementMode::kEnforce),
                                 Criticality::kCritical)
                .kind,
            Kind::kRefused);
  limits.concurrency->Release(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(EnforcedLimits::Slot(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  // Off: not asked, nothing taken.
  EXPECT_EQ(EnforcedLimits::Slot(limits, Throttle(EnforcementMode::kOff), Criticality::kCritical)
                .kind,
            Kind::kSkipped);
  EXPECT_EQ(limits.concurrency->in_flight(), 2);
}

TEST(EnforcedLimitsTest, ShadowAdaptiveLimitGetsNoSlotToLearnFrom) {
  SimulatedClock clock;
  ThrottleSettings s;
  s.adaptive = AdaptiveLimitSettings{};
  s.adaptive->gradient.initial_limit = 3;
  s.adaptive->gradient.min_limit = 3;
  ScopeLimits limits;
  limits.concurrency = CreateConcurrencyLimiter(s, clock);
  limits.adaptive = true;
  const EnforcementModes shadow = Throttle(EnforcementMode::kShadow);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(EnforcedLimits::Slot(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  }
  // The would-be-rejected call took no slot: the interceptor has none to
  // release, so the limiter never hears of its outcome or latency.
  EXPECT_EQ(EnforcedLimits::Slot(limits, shadow, Criticality::kCritical).kind, Kind::kShadowed);
  EXPECT_EQ(limits.concurrency->in_flight(), 3);
}

TEST(EnforcedLimitsTest, ShadowTokenBucketTakesNoTokenForARejectedCall) {
  SimulatedClock clock;
  ScopeLimits limits;
  limits.rate = *TokenBucket::Create(10, 1, clock);  // one token per 100 ms
  const EnforcementModes shadow = Throttle(EnforcementMode::kShadow);
  EXPECT_EQ(EnforcedLimits::Token(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  const LimitDecision second = EnforcedLimits::Token(limits, shadow, Criticality::kCritical);
  EXPECT_EQ(second.kind, Kind::kShadowed);
  EXPECT_EQ(second.retry_after, absl::Milliseconds(100));
  clock.AdvanceTime(absl::Milliseconds(100));
  // Had the shadowed call taken a token, this one would wait 100 ms more.
  EXPECT_TRUE(limits.rate->HasToken());
  EXPECT_EQ(EnforcedLimits::Token(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  EXPECT_FALSE(limits.rate->HasToken());
}

TEST(EnforcedLimitsTest, SharesInShadowCountTheirOwnRefusalsAndTakeNothing) {
  ScopeLimits limits;
  limits.concurrency = std::make_shared<FixedConcurrencyLimiter>(4);  // SHEDDABLE: cap 2
  const EnforcementModes shares_shadow =
      Throttle(EnforcementMode::kEnforce, EnforcementMode::kShadow);
  EXPECT_EQ(EnforcedLimits::Slot(limits, shares_shadow, Criticality::kSheddable).kind,
            Kind::kTaken);
  EXPECT_EQ(EnforcedLimits::Slot(limits, shares_shadow, Criticality::kSheddable).kind,
            Kind::kTaken);
  const LimitDecision over_share =
      EnforcedLimits::Slot(limits, shares_shadow, Criticality::kSheddable);
  EXPECT_EQ(over_share.kind, Kind::kShadowed);
  EXPECT_EQ(over_share.by, EnforcedPolicy::kCriticalityShares);
  EXPECT_EQ(limits.concurrency->in_flight(), 2);
  // Enforced shares refuse it as the limit's own refusal, as before.
  const LimitDecision enforced =
      EnforcedLimits::Slot(limits, EnforcementModes{}, Criticality::kSheddable);
  EXPECT_EQ(enforced.kind, Kind::kRefused);
  EXPECT_EQ(enforced.by, EnforcedPolicy::kThrottle);
  // Shares off: the whole limit for every level.
  EXPECT_EQ(EnforcedLimits::Slot(limits, Throttle(EnforcementMode::kEnforce,
                                                  EnforcementMode::kOff),
                                 Criticality::kSheddable)
                .kind,
            Kind::kTaken);
  EXPECT_EQ(EnforcedLimits::Slot(limits, shares_shadow, Criticality::kCritical).kind,
            Kind::kTaken);
  // The limit full: the limit's own refusal, enforced.
  EXPECT_EQ(EnforcedLimits::Slot(limits, shares_shadow, Criticality::kSheddable).kind,
            Kind::kRefused);
}

TEST(EnforcedLimitsTest, SharesInShadowOnABucketTellTheirRefusalFromTheBucketsOwn) {
  SimulatedClock clock;
  ScopeLimits limits;
  limits.rate = *TokenBucket::Create(10, 4, clock);  // SHEDDABLE sees 2 of 4 tokens
  const EnforcementModes shadow = Throttle(EnforcementMode::kShadow, EnforcementMode::kShadow);
  EXPECT_EQ(EnforcedLimits::Token(limits, shadow, Criticality::kSheddable).kind, Kind::kTaken);
  EXPECT_EQ(EnforcedLimits::Token(limits, shadow, Criticality::kSheddable).kind, Kind::kTaken);
  const LimitDecision share = EnforcedLimits::Token(limits, shadow, Criticality::kSheddable);
  EXPECT_EQ(share.kind, Kind::kShadowed);
  EXPECT_EQ(share.by, EnforcedPolicy::kCriticalityShares);
  EXPECT_EQ(EnforcedLimits::Token(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  EXPECT_EQ(EnforcedLimits::Token(limits, shadow, Criticality::kCritical).kind, Kind::kTaken);
  const LimitDecision empty = EnforcedLimits::Token(limits, shadow, Criticality::kSheddable);
  EXPECT_EQ(empty.kind, Kind::kShadowed);
  EXPECT_EQ(empty.by, EnforcedPolicy::kThrottle);
}

// A file that changes only the throttle's `enforcement` leaves its canonical
// forms (what ServerResilience::Update() keeps a scope's state by) as they
// were; the whole form still tells the files apart.
TEST(ScopeEnforcementTest, EnforcementIsNotPartOfTheThrottlesForm) {
  auto load = [](const std::string& modes) {
    absl::StatusOr<PolicyTable> t = PolicyTable::FromJsonString(absl::StrCat(
        R"({"methodConfig": [{"name": [{"service": "s", "method": "m"}],
            "throttle": {"maxConcurrency": 4, "ratePerSecond": 10, )",
        modes, "}}]}"));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? t->policies().front().canonical : MethodPolicy::CanonicalForms{};
  };
  const MethodPolicy::CanonicalForms enforce = load(R"("enforcement": "enforce",
      "cpu": {"threshold": 0.9}, "criticalityShares": {"sheddable": 0.4},
      "perCaller": {"key": {"peer": true}, "maxConcurrency": 2})");
  const MethodPolicy::CanonicalForms shadow = load(R"("enforcement": "shadow",
      "cpu": {"threshold": 0.9, "enforcement": "off"},
      "criticalityShares": {"sheddable": 0.4, "enforcement": "shadow"},
      "perCaller": {"key": {"peer": true}, "maxConcurrency": 2, "enforcement": "shadow"})");
  EXPECT_EQ(enforce.throttle, shadow.throttle);
  EXPECT_EQ(enforce.server, shadow.server);
  EXPECT_NE(enforce.whole, shadow.whole);
}

TEST(ShadowLogTest, OneLineAtFirstThenAtMostOnePerIntervalWithTheCount) {
  std::vector<std::string> lines;
  std::vector<int64_t> totals;
  ShadowLog log([&](const ShadowLog::Report& report) {
    lines.push_back(ShadowLog::Text(report));
    totals.push_back(report.total);
  });
  const absl::Time t0 = absl::FromUnixSeconds(1'000'000);
  log.Note(t0, "/cache.v1.CacheService/Get", EnforcedPolicy::kThrottle, "concurrency");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "shadow: /cache.v1.CacheService/Get: throttle would have rejected this call "
            "(concurrency); 1 call would have been rejected in this scope since the last such "
            "line (at most one per 10s)");
  for (int i = 0; i < 5; ++i) log.Note(t0 + absl::Seconds(i + 1), "/m", EnforcedPolicy::kCpu, "cpu");
  EXPECT_EQ(lines.size(), 1u);
  log.Note(t0 + ShadowLog::kInterval, "/m", EnforcedPolicy::kPerCaller, "rate");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[1], HasSubstr("perCaller would have rejected this call (rate); 6 calls"));
  EXPECT_THAT(totals, ::testing::ElementsAre(1, 7));
}

}  // namespace
}  // namespace resilience
