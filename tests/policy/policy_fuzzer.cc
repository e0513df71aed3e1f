// libFuzzer target for the policy loader: any bytes go in; the loader must
// return a status (never crash, hang or leak), strict mode must agree with
// the warnings, and whatever it accepts must answer lookups and build every
// runtime object the interceptors build from it: the breaker
// (CreateBreaker), the token bucket and the concurrency limiter of its
// throttle, the backoff, the retry budget and the deadlines (the call's
// timeout, each attempt's perAttemptTimeout). Each then takes
// a few decisions on a SimulatedClock moved by extreme steps (zero, one
// nanosecond, the policy's own periods, years). A runtime object that
// refuses or misbehaves on a loaded policy aborts: whatever the loader
// accepts, the runtime must accept. Built by scripts/fuzz.sh in its own clang
// configuration; links only the gRPC-free libraries.

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
#include "src/retry/windowed_retry_budget.h"
#include "src/core/simulated_clock.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "src/limits/token_bucket.h"
#include "src/policy/method_policy.h"
#include "src/policy/policy_table.h"
#include "tests/policy/policy_fuzz_support.h"

namespace resilience {
namespace {

// Durations the loader promised to bound.
void CheckDurations(const MethodPolicy& p) {
  const auto in = [&](std::optional<absl::Duration> d, absl::Duration high, const char* what) {
    if (d.has_value() && !(*d > absl::ZeroDuration() && *d <= high)) Die(p.source, what);
  };
  in(p.timeout, kMaxPolicyCallTime, "timeout out of bounds");
  if (p.retry) {
    in(p.retry->initial_backoff, kMaxPolicyInterval, "initialBackoff out of bounds");
    in(p.retry->max_backoff, kMaxPolicyInterval, "maxBackoff out of bounds");
    in(p.retry->per_attempt_timeout, kMaxPolicyCallTime, "perAttemptTimeout out of bounds");
  }
  // callerDeadline lives in a breaker; without one it keeps its default.
  if (p.breaker.kind == BreakerKind::kNone &&
      p.breaker.caller_deadline != CallerDeadline::kFailure) {
    Die(p.source, "callerDeadline set without a breaker");
  }
  if (p.throttle && p.throttle->adaptive) {
    in(p.throttle->adaptive->gradient.sample_window, kMaxPolicyInterval, "sampleWindow out of bounds");
    in(p.throttle->adaptive->aimd.sample_window, kMaxPolicyInterval, "sampleWindow out of bounds");
    in(p.throttle->adaptive->gradient.baseline_interval, kMaxPolicyInterval,
       "baselineInterval out of bounds");
    in(p.throttle->adaptive->aimd.timeout, kMaxPolicyCallTime, "adaptive timeout out of bounds");
    if (p.throttle->max_concurrency != 0) Die(p.source, "adaptive with maxConcurrency");
  }
  if (p.throttle) {
    in(p.throttle->min_pushback, kMaxPolicyInterval, "minPushback out of bounds");
    in(p.throttle->max_pushback, kMaxPolicyInterval, "maxPushback out of bounds");
  }
  if (p.fault_injection && !(p.fault_injection->delay >= absl::ZeroDuration() &&
                             p.fault_injection->delay <= kMaxPolicyInterval)) {
    Die(p.source, "fault delay out of bounds");
  }
}

// The deadlines the client interceptor arms for a call that starts at
// `start` with the caller's `caller_deadline` (InfiniteFuture() for none):
// the call's is the earlier of the caller's and start + timeout, and each
// attempt's the earlier of that and attempt start + perAttemptTimeout. The
// sums must stay finite, for attempts started at any time within the call.
void CheckDeadlines(const MethodPolicy& p, absl::Time start, absl::Time caller_deadline,
                    Draws& draws) {
  absl::Time call = caller_deadline;
  if (p.timeout) {
    const absl::Time own = start + *p.timeout;
    if (own == absl::InfiniteFuture() || own <= start) Die(p.source, "start + timeout overflows");
    call = std::min(call, own);
  }
  if (!p.retry || !p.retry->per_attempt_timeout) return;
  for (int attempt = 0; attempt < p.retry->max_attempts; ++attempt) {
    // An attempt starts somewhere between the call's start and its deadline.
    const absl::Time attempt_start =
        call == absl::InfiniteFuture()
            ? start + absl::Hours(static_cast<int64_t>(draws.Next(24 * 365)))
            : start + (call - start) * (static_cast<double>(draws.Next(1001)) / 1000);
    const absl::Time own = attempt_start + *p.retry->per_attempt_timeout;
    if (own == absl::InfiniteFuture() || own <= attempt_start) {
      Die(p.source, "attempt start + perAttemptTimeout overflows");
    }
    if (std::min(call, own) < attempt_start) {
      Die(p.source, "an attempt's deadline before its start");
    }
  }
}

// The breaker's own durations, as clock steps and latencies.
std::vector<absl::Duration> BreakerPeriods(const BreakerSettings& b) {
  if (b.kind == BreakerKind::kSre) {
    return {b.sre.window, b.sre.window / b.sre.buckets, b.sre.force_pass_interval,
            b.sre.slow_call_threshold, b.sre.refresh_interval};
  }
  const ThreeStateBreaker::Options& o = b.three_state;
  return {o.window,           o.window / o.buckets, o.open_duration, o.max_open_duration,
          o.probe_interval,   o.half_open_max_wait, o.slow_call_threshold, o.probe_overdue};
}

void ExerciseBreaker(const MethodPolicy& p, uint64_t seed, Draws& draws) {
  if (p.breaker.kind == BreakerKind::kNone) return;
  const absl::Status valid = p.breaker.kind == BreakerKind::kSre
                                 ? SreBreaker::Validate(p.breaker.sre)
                                 : ThreeStateBreaker::Validate(p.breaker.three_state);
  if (!valid.ok()) Die(p.source, "the breaker refuses a loaded policy:", valid);
  SimulatedClock clock;
  std::unique_ptr<Breaker> breaker = CreateBreaker(p.breaker, clock, seed);
  if (breaker == nullptr) Die(p.source, "CreateBreaker returned null");
  const std::vector<absl::Duration> periods = BreakerPeriods(p.breaker);
  const absl::Duration latencies[] = {absl::ZeroDuration(), absl::Nanoseconds(1),
                                      -absl::Seconds(1),    kMaxPolicyCallTime,
                                      absl::InfiniteDuration()};
  std::vector<Admission> in_flight;
  for (int i = 0; i < 64; ++i) {
    Admission a = breaker->Allow();
    if (a.admitted()) in_flight.push_back(std::move(a));
    Advance(clock, draws.Step(periods));
    // Finish some of the calls in flight, oldest first or newest first.
    while (!in_flight.empty() && draws.Next(3) != 0) {
      const bool newest = draws.Next(2) == 0;
      Admission done = std::move(newest ? in_flight.back() : in_flight.front());
      in_flight.erase(newest ? in_flight.end() - 1 : in_flight.begin());
      const Outcome outcome = static_cast<Outcome>(draws.Next(3));
      absl::Duration latency = draws.Next(2) == 0
                                   ? latencies[draws.Next(sizeof(latencies) / sizeof(latencies[0]))]
                                   : draws.Step(periods);
      done.Record(outcome, latency);
    }
    const BreakerSnapshot s = breaker->Snapshot();
    if (!(s.drop_probability >= 0.0 && s.drop_probability <= 1.0) ||
        !(s.failure_rate >= 0.0 && s.failure_rate <= 1.0) ||
        !(s.slow_call_rate >= 0.0 && s.slow_call_rate <= 1.0)) {
      Die(p.source, "breaker snapshot out of range");
    }
  }
}

void ExerciseRetry(const PolicyTable& set, const MethodPolicy& p, uint64_t seed, Draws& draws) {
  if (p.retry) {
    const RetrySettings& r = *p.retry;
    SplitMixRandom random(seed);
    absl::StatusOr<Backoff> made = Backoff::Create(r.backoff(), random);
    if (!made.ok()) Die(p.source, "Backoff::Create refuses a loaded retryPolicy:", made.status());
    const Backoff& backoff = *made;
    const absl::Duration most = r.max_backoff * (1.0 + r.jitter) + absl::Nanoseconds(1);
    for (int n : {1, 2, r.max_attempts, r.max_attempts + 1, 1100, 1 << 30}) {
      const absl::Duration d = backoff.Delay(n);
      if (!(d >= absl::ZeroDuration() && d <= most)) Die(p.source, "backoff out of bounds");
    }
  }
  if (p.hedging) {
    // The loaded hedgingPolicy as the client builds it, driven through a
    // call: the delays it arms are in [0, 1h], the decider never sends more
    // than maxAttempts, and every call ends.
    const HedgingSettings& h = *p.hedging;
    if (h.max_attempts < 2 || h.max_attempts > HedgingDecider::kMaxAttempts) {
      Die(p.source, "hedging maxAttempts out of [2, 5]");
    }
    HedgingDecider::Options o;
    o.max_attempts = h.max_attempts;
    o.delay = h.delay;
    o.non_fatal_codes = h.non_fatal_status_codes;
    o.adaptive_delay = h.adaptive_delay;
    o.budget = p.retry_budget;
    HedgingDecider decider(o);
    const absl::Time now = absl::UnixEpoch() + absl::Hours(24);
    for (int i = 0; i < 200; ++i) decider.RecordLatency(absl::Microseconds(static_cast<int64_t>(draws.Next(1 << 20))));
    const absl::Duration delay = decider.Delay();
    if (!(delay >= absl::ZeroDuration() && delay <= kMaxPolicyInterval * 1.19)) {
      Die(p.source, "hedging delay out of bounds");
    }
    HedgingDecider::Call call;
    decider.Start(call);
    for (int step = 0; step < 20 && !call.ended; ++step) {
      if (draws.Next(2) == 0) {
        decider.OnTimer(call, now, absl::InfiniteFuture());
      } else if (call.in_flight > 0) {
        AttemptOutcome outcome;
        outcome.code = static_cast<absl::StatusCode>(draws.Next(17));
        decider.OnAttemptEnd(call, outcome, now, absl::InfiniteFuture());
      }
      if (call.sent > h.max_attempts) Die(p.source, "hedging sent more than maxAttempts");
    }
  }
  if (p.windowed_budget) {
    // retryBudget with a ttl, as the client builds it: calls deposit,
    // retries withdraw only what is there, while the clock jumps.
    if (absl::Status s = WindowedRetryBudget::Validate(*p.windowed_budget); !s.ok()) {
      Die(p.source, "WindowedRetryBudget refuses a loaded retryBudget:", s);
    }
    SimulatedClock clock;
    WindowedRetryBudget windowed(*p.windowed_budget, clock);
    const std::vector<absl::Duration> periods = {p.windowed_budget->ttl,
                                                 p.windowed_budget->ttl / 10};
    for (int i = 0; i < 128; ++i) {
      if (draws.Next(2) == 0) {
        windowed.RecordCall();
      } else {
        const bool allowed = windowed.AllowRetry();
        if (windowed.TryWithdraw() != allowed) Die(p.source, "windowed budget withdrew unlike it allowed");
      }
      if (draws.Next(4) == 0) Advance(clock, draws.Step(periods));
    }
  }
  const RetryBudgetSettings b = set.stream_retry_throttling();
  absl::StatusOr<std::unique_ptr<RetryBudget>> made = RetryBudget::Create(b);
  if (!made.ok()) {
    Die(p.source, "RetryBudget::Create refuses a loaded retryThrottling:", made.status());
  }
  RetryBudget& budget = **made;
  for (int i = 0; i < 64; ++i) {
    if (draws.Next(2) == 0) {
      budget.RecordFailure();
    } else {
      budget.RecordSuccess();
    }
    const double tokens = budget.tokens();
    if (!(tokens >= 0 && tokens <= b.max_tokens)) Die(p.source, "retry budget out of range");
    if (budget.AllowRetry() != (tokens * 2 > b.max_tokens)) {
      Die(p.source, "retry budget decision disagrees with its tokens");
    }
  }
}

}  // namespace
}  // namespace resilience

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using resilience::MethodPolicy;
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<resilience::PolicyTable> set = resilience::PolicyTable::FromJsonString(json);
  // Strict mode loads exactly what loads without warnings; otherwise it
  // lists the warnings, or fails as the normal mode does.
  absl::StatusOr<resilience::PolicyTable> strict =
      resilience::PolicyTable::FromJsonString(json, resilience::PolicyTable::LoadOptions{true});
  if (!set.ok()) {
    if (set.status().message().empty()) __builtin_trap();  // every error must say what was wrong
    if (strict.ok() || strict.status() != set.status()) __builtin_trap();
    return 0;
  }
  for (const std::string& warning : set->warnings()) {
    // One line, naming a path: something to show an operator.
    if (warning.empty() || warning.find('\n') != std::string::npos) __builtin_trap();
  }
  if (set->warnings().empty() != strict.ok()) __builtin_trap();
  if (!strict.ok() &&
      strict.status().message() !=
          absl::StrCat("strict mode: ", set->warnings().size(),
                       " warning(s): ", absl::StrJoin(set->warnings(), "; "))) {
    __builtin_trap();
  }
  for (const char* method : {"/cache.v1.CacheService/Get", "/s.S/M", "", "/", "//"}) {
    (void)set->Find(method);
  }
  const uint64_t seed = resilience::Fnv1a(data, size);
  resilience::Draws draws(seed);
  const absl::Time start = absl::UnixEpoch() + absl::Hours(24);
  for (const MethodPolicy& policy : set->policies()) {
    resilience::CheckDurations(policy);
    resilience::CheckDeadlines(policy, start, absl::InfiniteFuture(), draws);
    resilience::CheckDeadlines(policy, start, start + absl::Seconds(1), draws);
    resilience::ExerciseBreaker(policy, seed, draws);
    resilience::ExerciseThrottle(policy, draws);
    resilience::ExerciseGlobalThrottle(policy, draws);
    resilience::ExercisePerCaller(policy, draws);
    resilience::ExerciseBulkhead(policy, draws);
    resilience::ExerciseRetry(*set, policy, seed, draws);
  }
  return 0;
}
