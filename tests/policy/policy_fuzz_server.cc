// File: tests/policy/policy_fuzz_server.cc
//
// The policy fuzzer's server side: whatever the loader accepts, the runtime
// objects of the server's throttle accept and keep in bounds (see
// policy_fuzzer.cc).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "src/retry/backoff.h"
#include "src/breaker/breaker.h"
#include "src/limits/adaptive_concurrency_limiter.h"
#include "src/limits/aimd_concurrency_limiter.h"
#include "src/limits/bulkhead.h"
#include "src/limits/cpu_utilisation_meter.h"
#include "src/limits/criticality_shares.h"
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/gradient_concurrency_limiter.h"
#include "src/limits/per_caller_limits.h"
#include "src/limits/global_rate_limiter.h"
#include "src/policy/global_throttle_policy.h"
#include "src/core/random_source.h"
#include "src/retry/hedging_decider.h"
#include "src/retry/retry_budget.h"
#include "src/core/simulated_clock.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "src/limits/token_bucket.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_table.h"
#include "tests/policy/policy_fuzz_support.h"

namespace resilience {
namespace {

// An adaptive limit built from the loaded settings: slots taken and given
// back with any outcome and latency while the clock jumps by the policy's own
// periods; the limit stays in [minLimit, maxLimit] and no slot is lost.
void ExerciseAdaptiveLimit(const MethodPolicy& p, Draws& draws) {
  const AdaptiveLimitSettings& a = *p.throttle->adaptive;
  const bool aimd = a.algorithm == AdaptiveLimitSettings::Algorithm::kAimd;
  const absl::Status valid = aimd ? AimdConcurrencyLimiter::Validate(a.aimd)
                                  : GradientConcurrencyLimiter::Validate(a.gradient);
  if (!valid.ok()) Die(p.source, "the adaptive limiter refuses a loaded throttle:", valid);
  const AdaptiveConcurrencyLimiter::Options& o =
      aimd ? static_cast<const AdaptiveConcurrencyLimiter::Options&>(a.aimd) : a.gradient;
  SimulatedClock clock;
  std::unique_ptr<ConcurrencyLimiter> limiter = CreateConcurrencyLimiter(*p.throttle, clock);
  if (limiter == nullptr) Die(p.source, "CreateConcurrencyLimiter returned null");
  const std::vector<absl::Duration> periods = {o.sample_window, a.gradient.baseline_interval,
                                               a.aimd.timeout};
  const absl::Duration latencies[] = {absl::ZeroDuration(), absl::Nanoseconds(1),
                                      -absl::Seconds(1), kMaxPolicyCallTime,
                                      absl::InfiniteDuration()};
  int64_t held = 0;
  for (int i = 0; i < 256; ++i) {
    if (draws.Next(2) == 0 && held < 512) {
      if (limiter->TryAcquire()) ++held;
    } else if (held > 0) {
      const Outcome outcome = static_cast<Outcome>(draws.Next(3));
      const absl::Duration latency =
          draws.Next(2) == 0 ? latencies[draws.Next(sizeof(latencies) / sizeof(latencies[0]))]
                             : draws.Step(periods);
      limiter->Release(outcome, latency);
      --held;
    }
    if (draws.Next(4) == 0) Advance(clock, draws.Step(periods));
    if (limiter->limit() < o.min_limit || limiter->limit() > o.max_limit) {
      Die(p.source, "adaptive limit out of [minLimit, maxLimit]");
    }
    if (limiter->in_flight() != held) Die(p.source, "adaptive limiter lost count of its slots");
  }
  while (held-- > 0) limiter->Release(Outcome::kSuccess, absl::Milliseconds(1));
  if (limiter->in_flight() != 0) Die(p.source, "adaptive limiter did not return to 0");
}

}  // namespace

void ExerciseThrottle(const MethodPolicy& p, Draws& draws) {
  if (!p.throttle) return;
  const ThrottleSettings& t = *p.throttle;
  if (t.min_pushback > t.max_pushback) Die(p.source, "minPushback > maxPushback");
  if (t.max_concurrency > 0) {
    absl::StatusOr<std::unique_ptr<FixedConcurrencyLimiter>> made =
        FixedConcurrencyLimiter::Create(t.max_concurrency);
    if (!made.ok()) {
      Die(p.source, "FixedConcurrencyLimiter::Create refuses a loaded throttle:", made.status());
    }
    FixedConcurrencyLimiter& limiter = **made;
    const int64_t n = std::min<int64_t>(t.max_concurrency, 256);
    for (int64_t i = 0; i < n; ++i) {
      if (!limiter.TryAcquire()) Die(p.source, "the limiter refused a slot under its limit");
    }
    if (n == t.max_concurrency && limiter.TryAcquire()) Die(p.source, "limiter over its limit");
    for (int64_t i = 0; i < n; ++i) limiter.Release(Outcome::kSuccess, absl::ZeroDuration());
    if (limiter.in_flight() != 0) Die(p.source, "limiter did not return to 0");
  }
  if (t.adaptive) ExerciseAdaptiveLimit(p, draws);
  if (t.rate_per_second <= 0) return;
  SimulatedClock clock;
  absl::StatusOr<std::unique_ptr<TokenBucket>> created =
      TokenBucket::Create(t.rate_per_second, t.burst, clock);
  if (!created.ok()) {
    Die(p.source, "TokenBucket::Create refuses a loaded throttle:", created.status());
  }
  TokenBucket& bucket = **created;
  const absl::Duration interval = absl::Nanoseconds(TokenBucket::IntervalNanos(t.rate_per_second));
  const absl::Duration refill = interval * t.burst;
  const std::vector<absl::Duration> periods = {interval, refill, t.max_pushback};
  const int64_t tries = std::min<int64_t>(t.burst, 64);
  for (int i = 0; i < 32; ++i) {
    for (int64_t k = 0; k <= tries; ++k) {
      absl::Duration retry_after;
      if (!bucket.TryAcquire(&retry_after)) {
        // Refused: the next token is at most one interval away.
        if (!(retry_after > absl::ZeroDuration() && retry_after <= interval)) {
          Die(p.source, "token bucket retry_after out of (0, interval]");
        }
        break;
      }
    }
    Advance(clock, draws.Step(periods));
  }
  // From any state, one full refill later the bucket holds `burst` tokens.
  clock.AdvanceTime(refill);
  for (int64_t k = 0; k < tries; ++k) {
    if (!bucket.TryAcquire()) Die(p.source, "token bucket not full after a full refill");
  }
}

// throttle.global: the limiter the server builds (its Redis client is not
// started: nothing here connects), through start, leases, a failure and the
// way back, on a clock moved by the draws.
namespace {

void ExerciseGlobalLimiter(const MethodPolicy& p, const GlobalThrottleSettings& g, Draws& draws) {
  SimulatedClock clock;
  absl::StatusOr<std::unique_ptr<GlobalRateLimiter>> made =
      GlobalRateLimiter::Create(LimiterOptions(g), clock);
  if (!made.ok()) Die(p.source, "GlobalRateLimiter::Create refuses a loaded throttle:", made.status());
  GlobalRateLimiter& limiter = **made;
  const std::vector<absl::Duration> periods = {g.lease_interval, absl::Seconds(1)};
  for (int i = 0; i < 32; ++i) {
    for (int k = 0; k < 8; ++k) {
      absl::Duration retry_after;
      if (!limiter.TryAcquire(&retry_after) && retry_after < absl::ZeroDuration()) {
        Die(p.source, "global limiter retry_after negative");
      }
    }
    const int64_t want = limiter.LeaseWanted();
    if (want < 0 || want > limiter.MaxLease()) Die(p.source, "lease size out of [0, MaxLease]");
    switch (draws.Next(3)) {
      case 0:
        limiter.OnLease(want, static_cast<int64_t>(draws.Next(static_cast<uint64_t>(want) + 1)),
                        static_cast<double>(draws.Next(100)));
        break;
      case 1:
        limiter.OnFailure("fuzz");
        if (!(limiter.local_rate() > 0 && limiter.local_rate() <= g.rate_per_second * 1.000001)) {
          Die(p.source, "local share out of (0, rate]");
        }
        break;
      default:
        break;
    }
    Advance(clock, draws.Step(periods));
  }
}

}  // namespace

// throttle.global and each key's bucket of throttle.perCaller.global.
void ExerciseGlobalThrottle(const MethodPolicy& p, Draws& draws) {
  if (!p.throttle) return;
  if (p.throttle->global) ExerciseGlobalLimiter(p, *p.throttle->global, draws);
  if (p.throttle->per_caller && p.throttle->per_caller->global) {
    ExerciseGlobalLimiter(p, *p.throttle->per_caller->global, draws);
  }
  // throttle.cpu: the gate's own rule accepts the loaded threshold.
  if (p.throttle->cpu_threshold &&
      !CpuUtilisationMeter::ValidateThreshold(*p.throttle->cpu_threshold).ok()) {
    Die(p.source, "the CPU gate refuses a loaded threshold");
  }
}

// throttle.perCaller with throttle.criticalityShares and the method's
// criticality: the limits the server builds, fed keys of every kind (none,
// short, long, binary, '#'-prefixed, more keys than maxKeys) at every level;
// no key is stored unbounded, a refused call names a printable key, slots
// held come back, and the table never holds more than maxKeys keys.
void ExercisePerCaller(const MethodPolicy& p, Draws& draws) {
  if (!p.throttle) return;
  const ThrottleSettings& t = *p.throttle;
  if (absl::Status s = CriticalityShares::Validate(t.criticality_shares.shares()); !s.ok()) {
    Die(p.source, "loaded criticality shares refused:", s);
  }
  const CriticalitySettings& c = p.criticality;
  // A higher index is less critical: nothing may sit above the ceiling.
  if (CriticalityIndex(c.default_level) < CriticalityIndex(c.ceiling)) {
    Die(p.source, "criticality default above its ceiling");
  }
  if (!t.per_caller) return;
  const PerCallerLimits::Options& o = t.per_caller->limits;
  SimulatedClock clock;
  absl::StatusOr<std::unique_ptr<PerCallerLimits>> made = PerCallerLimits::Create(o, clock);
  if (!made.ok()) Die(p.source, "PerCallerLimits::Create refuses a loaded throttle:", made.status());
  PerCallerLimits& limits = **made;
  const std::string long_key(PerCallerLimits::kMaxKeyBytes + 1 + draws.Next(64), 'k');
  const std::string binary_key("\x00\xff\n", 3);
  std::vector<PerCallerLimits::Slot> held;
  const std::vector<absl::Duration> periods = {absl::Seconds(1), t.max_pushback};
  for (int i = 0; i < 256; ++i) {
    std::string key;
    switch (draws.Next(6)) {
      case 0: break;
      case 1: key = long_key; break;
      case 2: key = binary_key; break;
      case 3: key = "#forged"; break;
      default: key = absl::StrCat("tenant-", draws.Next(64)); break;
    }
    const Criticality claimed = static_cast<Criticality>(draws.Next(kCriticalityLevels));
    const Criticality level = c.Resolve(draws.Next(3) == 0 ? std::nullopt
                                                            : std::optional<Criticality>(claimed));
    if (CriticalityIndex(level) < CriticalityIndex(c.ceiling)) {
      Die(p.source, "a header raised a call above the ceiling");
    }
    PerCallerLimits::Admission a = limits.TryAcquire(key, t.criticality_shares, level);
    if (a.verdict != PerCallerLimits::Verdict::kAdmitted) {
      if (a.key.size() > PerCallerLimits::kMaxKeyBytes + 1 + 16) Die(p.source, "refused key unbounded");
      for (char ch : a.key) {
        if (ch < 0x20 || ch > 0x7e) Die(p.source, "refused key not printable");
      }
      if (a.retry_after < absl::ZeroDuration()) Die(p.source, "per-caller retry_after negative");
    } else if (a.slot.held() && held.size() < 512) {
      held.push_back(std::move(a.slot));
    }
    if (draws.Next(3) == 0 && !held.empty()) held.pop_back();
    if (draws.Next(4) == 0) Advance(clock, draws.Step(periods));
    if (limits.keys_tracked() > o.max_keys) Die(p.source, "per-caller table over maxKeys");
  }
}

// bulkhead: the client's bound, entered and left with every kind of time
// left; slots and the queue stay within their options and all come back.
void ExerciseBulkhead(const MethodPolicy& p, Draws& draws) {
  if (!p.bulkhead) return;
  const Bulkhead::Options& o = *p.bulkhead;
  if (absl::Status s = Bulkhead::Validate(o); !s.ok()) Die(p.source, "loaded bulkhead refused:", s);
  struct FuzzWaiter : Bulkhead::Waiter {
    bool granted = false;
    void SlotGranted() override { granted = true; }
  };
  SimulatedClock clock;
  Bulkhead bulkhead(o, clock);
  std::vector<std::unique_ptr<FuzzWaiter>> queued;
  int holding = 0;
  const std::vector<absl::Duration> periods = {o.max_wait, absl::Milliseconds(1)};
  for (int i = 0; i < 256; ++i) {
    switch (draws.Next(3)) {
      case 0: {
        auto w = std::make_unique<FuzzWaiter>();
        const absl::Duration left =
            draws.Next(4) == 0 ? absl::InfiniteDuration() : draws.Step(periods);
        switch (bulkhead.Enter(*w, left)) {
          case Bulkhead::Entry::kAdmitted: ++holding; break;
          case Bulkhead::Entry::kQueued:
            if (w->wait_until() > clock.Now() + std::max(left, absl::ZeroDuration())) {
              Die(p.source, "a queued call outlives its deadline");
            }
            queued.push_back(std::move(w));
            break;
          default: break;
        }
        break;
      }
      case 1:
        if (holding > 0) { bulkhead.Leave(); --holding; }
        break;
      default:
        if (!queued.empty()) {
          if (!bulkhead.EndWait(*queued.back())) ++holding;
          queued.pop_back();
        }
        break;
    }
    const Bulkhead::Stats st = bulkhead.stats();
    if (st.in_use > o.max_concurrency || st.queued > o.max_queue) Die(p.source, "bulkhead over its bounds");
  }
  for (auto& w : queued) {
    if (!bulkhead.EndWait(*w)) ++holding;
  }
  while (holding-- > 0) bulkhead.Leave();
  if (bulkhead.stats().in_use != 0 || bulkhead.stats().queued != 0) Die(p.source, "bulkhead leaked");
}

}  // namespace resilience
