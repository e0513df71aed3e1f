// Shadow mode's target: the same recorded load (seeded arrivals, durations,
// criticalities and caller keys) replayed through a throttle scope's limits
// in enforce mode and in shadow mode. A call a shadow limit would reject
// takes nothing from it (no slot, no token, no sample for an adaptive
// limit), so the limits go through the same states in both runs, and the
// shadow run's "would have rejected" equals the enforce run's rejections
// exactly, by construction (the target is within 2 %). On the
// simulated clock; the admission follows ThrottleStage::Admit():
// perCaller, then the concurrency limit, then the rate limit, each through
// EnforcedLimits, with the interceptor's Shadowed() give-back rule.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"
#include "src/server_interceptors/enforced_limits.h"

namespace resilience {
namespace {

struct Call {
  absl::Duration gap;       // since the previous arrival
  absl::Duration duration;  // how long it runs once admitted
  Criticality level;
  std::string key;
};

std::vector<Call> Record(uint64_t seed, int n) {
  SplitMixRandom random(seed);
  std::vector<Call> calls;
  for (int i = 0; i < n; ++i) {
    Call c;
    // About 2,000 calls/s, 1 to 9 ms each: around 10 in flight on average.
    c.gap = absl::Microseconds(static_cast<int64_t>(1 + 999 * random.NextUniform()));
    c.duration = absl::Microseconds(static_cast<int64_t>(1000 + 8000 * random.NextUniform()));
    c.level = static_cast<Criticality>(static_cast<int>(random.NextUniform() * 4) % 4);
    c.key = absl::StrCat("tenant-", static_cast<int>(random.NextUniform() * 5));
    calls.push_back(std::move(c));
  }
  return calls;
}

struct Counts {
  int64_t rejected = 0;  // for real
  int64_t shadow_throttle = 0;
  int64_t shadow_shares = 0;
  int64_t shadow_per_caller = 0;
  int64_t admitted = 0;
};

struct Running {
  absl::Time end;
  bool holds_slot;
  std::shared_ptr<PerCallerLimits::Slot> caller_slot;
  absl::Duration latency;
  bool operator>(const Running& o) const { return end > o.end; }
};

// The calls through a scope made from `settings` with `modes`.
Counts Replay(const std::vector<Call>& calls, const ThrottleSettings& settings,
              const PerCallerLimits::Options* per_caller, const EnforcementModes& file_modes) {
  SimulatedClock clock;
  ScopeLimits limits;
  limits.concurrency = CreateConcurrencyLimiter(settings, clock);
  limits.adaptive = settings.adaptive.has_value();
  if (settings.rate_per_second > 0) {
    limits.rate = *TokenBucket::Create(settings.rate_per_second, settings.burst, clock);
  }
  if (per_caller != nullptr) limits.per_caller = *PerCallerLimits::Create(*per_caller, clock);
  limits.shares = settings.criticality_shares;
  Counts counts;
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running;
  for (const Call& call : calls) {
    const absl::Time arrival = clock.Now() + call.gap;
    while (!running.empty() && running.top().end <= arrival) {
      clock.SetTime(running.top().end);
      if (running.top().holds_slot) {
        limits.concurrency->Release(Outcome::kSuccess, running.top().latency);
      }
      if (running.top().caller_slot) running.top().caller_slot->Release();
      running.pop();
    }
    clock.SetTime(arrival);
    EnforcementModes modes = file_modes;
    bool holds_slot = false;
    auto caller_slot = std::make_shared<PerCallerLimits::Slot>();
    bool rejected = false;
    // ThrottleStage::Shadowed(): count, give back what the policies
    // that do not enforce hold, later shadow policies off.
    auto shadowed = [&](EnforcedPolicy by) {
      if (by == EnforcedPolicy::kThrottle) ++counts.shadow_throttle;
      if (by == EnforcedPolicy::kCriticalityShares) ++counts.shadow_shares;
      if (by == EnforcedPolicy::kPerCaller) ++counts.shadow_per_caller;
      if (holds_slot && modes.throttle != EnforcementMode::kEnforce) {
        limits.concurrency->ReleaseUnused();
        holds_slot = false;
      }
      if (modes.per_caller != EnforcementMode::kEnforce) caller_slot->Release();
      modes.AfterShadowRefusal();
    };
    if (limits.per_caller != nullptr && modes.per_caller != EnforcementMode::kOff) {
      PerCallerLimits::Admission a = limits.per_caller->TryAcquire(
          call.key, EnforcedLimits::Shares(limits, modes), call.level);
      if (a.verdict == PerCallerLimits::Verdict::kAdmitted) {
        *caller_slot = std::move(a.slot);
      } else if (modes.per_caller == EnforcementMode::kShadow) {
        shadowed(EnforcedPolicy::kPerCaller);
      } else {
        rejected = true;
      }
    }
    if (!rejected && limits.concurrency != nullptr) {
      const LimitDecision d = EnforcedLimits::Slot(limits, modes, call.level);
      rejected = d.kind == LimitDecision::Kind::kRefused;
      holds_slot = d.kind == LimitDecision::Kind::kTaken;
      if (d.kind == LimitDecision::Kind::kShadowed) shadowed(d.by);
    }
    if (!rejected && limits.rate != nullptr) {
      const LimitDecision d = EnforcedLimits::Token(limits, modes, call.level);
      rejected = d.kind == LimitDecision::Kind::kRefused;
      if (d.kind == LimitDecision::Kind::kShadowed) shadowed(d.by);
    }
    if (rejected) {
      if (holds_slot) limits.concurrency->ReleaseUnused();
      caller_slot->Release();
      ++counts.rejected;
      continue;
    }
    ++counts.admitted;
    running.push({arrival + call.duration, holds_slot, caller_slot, call.duration});
  }
  return counts;
}

EnforcementModes AllIn(EnforcementMode mode) {
  EnforcementModes m;
  m.throttle = m.shares = m.cpu = m.per_caller = m.global = mode;
  return m;
}

class ShadowReplayTest : public ::testing::Test {
 protected:
  // Enforce, then shadow, on the same recording: the shadow run admits
  // every call and would have rejected exactly what enforce rejected.
  void ExpectSameDecisions(const ThrottleSettings& settings,
                           const PerCallerLimits::Options* per_caller = nullptr) {
    const Counts enforce = Replay(calls_, settings, per_caller, AllIn(EnforcementMode::kEnforce));
    const Counts shadow = Replay(calls_, settings, per_caller, AllIn(EnforcementMode::kShadow));
    const Counts off = Replay(calls_, settings, per_caller, AllIn(EnforcementMode::kOff));
    // The limit binds for a good part of the load, not for all of it.
    EXPECT_GT(enforce.rejected, static_cast<int64_t>(calls_.size()) / 20);
    EXPECT_LT(enforce.rejected, static_cast<int64_t>(calls_.size()) * 9 / 10);
    EXPECT_EQ(shadow.rejected, 0);
    EXPECT_EQ(shadow.admitted, static_cast<int64_t>(calls_.size()));
    EXPECT_EQ(shadow.shadow_throttle + shadow.shadow_shares + shadow.shadow_per_caller,
              enforce.rejected);
    EXPECT_EQ(off.rejected + off.shadow_throttle + off.shadow_shares + off.shadow_per_caller, 0);
    shadow_ = shadow;
    std::printf("%zu calls: enforce rejected %lld; shadow admitted %lld, would have rejected "
                "%lld (throttle %lld, criticalityShares %lld, perCaller %lld)\n",
                calls_.size(), static_cast<long long>(enforce.rejected),
                static_cast<long long>(shadow.admitted),
                static_cast<long long>(shadow.shadow_throttle + shadow.shadow_shares +
                                       shadow.shadow_per_caller),
                static_cast<long long>(shadow.shadow_throttle),
                static_cast<long long>(shadow.shadow_shares),
                static_cast<long long>(shadow.shadow_per_caller));
  }

  const std::vector<Call> calls_ = Record(20260801, 20000);
  Counts shadow_;
};

TEST_F(ShadowReplayTest, FixedConcurrency) {
  ThrottleSettings s;
  s.max_concurrency = 8;
  s.criticality_shares = CriticalityShares({1, 1, 1, 1});
  ExpectSameDecisions(s);
  EXPECT_EQ(shadow_.shadow_shares, 0);
}

TEST_F(ShadowReplayTest, Rate) {
  ThrottleSettings s;
  s.rate_per_second = 1500;
  s.burst = 20;
  s.criticality_shares = CriticalityShares({1, 1, 1, 1});
  ExpectSameDecisions(s);
}

TEST_F(ShadowReplayTest, Adaptive) {
  ThrottleSettings s;
  s.adaptive = AdaptiveLimitSettings{};
  s.adaptive->gradient.initial_limit = 6;
  s.adaptive->gradient.min_limit = 3;
  s.adaptive->gradient.max_limit = 8;
  s.criticality_shares = CriticalityShares({1, 1, 1, 1});
  ExpectSameDecisions(s);
}

TEST_F(ShadowReplayTest, ConcurrencyAndRateWithShares) {
  ThrottleSettings s;
  s.max_concurrency = 10;
  s.rate_per_second = 1800;
  s.burst = 20;  // criticalityShares' defaults: SHEDDABLE sees half
  ExpectSameDecisions(s);
  // Some refusals were only the shares': criticalityShares' own count.
  EXPECT_GT(shadow_.shadow_shares, 0);
  EXPECT_GT(shadow_.shadow_throttle, 0);
}

TEST_F(ShadowReplayTest, PerCallerThenConcurrency) {
  ThrottleSettings s;
  s.max_concurrency = 9;
  // perCaller judges at the whole share while the shares are in shadow
  // (their share refusals there are not counted): exact without shares.
  s.criticality_shares = CriticalityShares({1, 1, 1, 1});
  PerCallerLimits::Options per_caller;
  per_caller.max_concurrency = 3;
  per_caller.rate_per_second = 500;
  per_caller.burst = 5;
  ExpectSameDecisions(s, &per_caller);
  EXPECT_GT(shadow_.shadow_per_caller, 0);
}

}  // namespace
}  // namespace resilience
