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
#include "src/limits/fixed_concurrency_limiter.h"
#include "src/limits/gradient_concurrency_limiter.h"
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
void ExerciseGlobalThrottle(const MethodPolicy& p, Draws& draws) {
  if (!p.throttle || !p.throttle->global) return;
  const GlobalThrottleSettings& g = *p.throttle->global;
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

}  // namespace resilience
