// File: src/policy/method_policy.h
//
// The resolved settings of one methodConfig entry: every default applied,
// every value validated, in the library's own types (absl::Duration, the
// breaker Options structs). Produced only by PolicyTable; the interceptors read
// it. See proto/resilience/v1/policy.proto for the meaning of each field.

#ifndef GRPC_RESILIENCE_SRC_POLICY_METHOD_POLICY_H_
#define GRPC_RESILIENCE_SRC_POLICY_METHOD_POLICY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpc_resilience/criticality_level.h"
#include "grpc_resilience/enforcement_mode.h"
#include "src/breaker/endpoint_breakers.h"
#include "src/breaker/recovery_probe.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "src/limits/aimd_concurrency_limiter.h"
#include "src/limits/bulkhead.h"
#include "src/limits/concurrency_limiter.h"
#include "src/limits/criticality_shares.h"
#include "src/limits/deadline_admission.h"
#include "src/limits/gradient_concurrency_limiter.h"
#include "src/limits/retry_shedding.h"
#include "src/policy/global_throttle_settings.h"
#include "src/policy/outcome_classifier.h"
#include "src/policy/per_caller_settings.h"
#include "src/retry/backoff.h"
#include "src/retry/hedging_decider.h"
#include "src/retry/retry_budget.h"
#include "src/retry/windowed_retry_budget.h"

namespace resilience {

// The upper bounds the policy loader puts on the durations of a policy file
// (docs/bounds.md lists every bound and why), so that the interceptors and
// breakers never see a duration whose arithmetic could overflow or whose
// timer could not be armed. Errors name the JSON path and the value.

// Call lengths: timeout, retryPolicy.perAttemptTimeout, perAttemptRecvTimeout
// and the breakers' slowCallThreshold. Long enough for long-lived streams; an unbounded call is
// written by leaving the field out.
inline constexpr absl::Duration kMaxPolicyCallTime = absl::Hours(24 * 30);
// How long a breaker stays open, and half-open probes wait: openDuration,
// maxOpenDuration, halfOpenMaxWait. Longer is an outage better expressed by
// mode "force_open".
inline constexpr absl::Duration kMaxPolicyOpenTime = absl::Hours(24);
// Control-loop periods: retry backoffs, breaker windows, forcePassInterval,
// probeInterval, throttle pushbacks and fault-injection delay.
inline constexpr absl::Duration kMaxPolicyInterval = absl::Hours(1);
// Backoffs are bounded by Backoff::Validate(), to which the loader leaves
// them: its bound must be this one.
static_assert(Backoff::kMaxBackoff == kMaxPolicyInterval);

// A retryPolicy. Its backoff fields (initial_backoff, max_backoff,
// backoff_multiplier, jitter, full_jitter) and their defaults are
// Backoff::Options's, inherited so that they are declared in one place and
// read here under the same names; backoff() is them as Backoff takes them.
struct RetrySettings : Backoff::Options {
  int max_attempts = 3;
  std::vector<absl::StatusCode> retryable_status_codes = {absl::StatusCode::kUnavailable};
  // retryPolicy.perAttemptTimeout (ours; gRPC has none): each attempt's
  // deadline is min(the call's deadline, attempt start + this).
  std::optional<absl::Duration> per_attempt_timeout;

  const Backoff::Options& backoff() const { return *this; }
};

// A policy's `fallback`: what a refused or failed unary call answers
// instead (loaded by PolicyTableBuilder; docs/fallbacks.md).
struct StaticFallback {
  // The response message, serialized (from `response`, the message as JSON,
  // checked against the method's output type); empty with a status.
  std::string response;
  // The status the caller gets: OK with `response`, or `status`.
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;
  // onCodes: the failures it answers; empty: the retryable codes.
  std::vector<absl::StatusCode> codes;
  // onLocalRejections: the calls the chain refused (breaker, bulkhead,
  // spent retry budget), whatever their code.
  bool local_rejections = true;
};

// A hedgingPolicy (gRFC A6, plus our adaptiveDelay): HedgingDecider's
// options without the budget (the file's retryThrottling, added by the
// client). Loaded by policy/hedging_settings.h.
struct HedgingSettings {
  int max_attempts = 2;  // in [2, 5]
  absl::Duration delay = absl::ZeroDuration();
  std::vector<absl::StatusCode> non_fatal_status_codes;
  std::optional<HedgingDecider::AdaptiveDelay> adaptive_delay;
};

// A token bucket of retries: gRPC's retryThrottling (one per channel,
// shared by its methods) or our retryBudget (one per channel and method).
// The fields and defaults are RetryBudget's own.
using RetryBudgetSettings = RetryBudget::Options;

enum class BreakerKind { kNone, kSre, kThreeState };

// breaker.callerDeadline: what a call that was sent and then ended by the
// caller's own deadline (or the policy's `timeout`) tells the breaker. A
// backend that hangs is only ever seen this way, so by default it counts
// (then failureCodes and slowCallThreshold decide, as for any result).
enum class CallerDeadline { kFailure, kNeutral };

// How a call or attempt that got no answer from a server ended, as far as
// the client knows: the breaker reads these apart from the status code.
enum class LocalEnd {
  kNone,                  // the status is the server's (or the transport's)
  kCancelledByCaller,     // the caller cancelled
  kDeadlineBeforeStart,   // the deadline had passed before it was sent
  kPerAttemptTimeout,     // its per-attempt timeout ran out
  kCallDeadline,          // the call's deadline (caller's or `timeout`) ran out
};

struct BreakerSettings {
  BreakerKind kind = BreakerKind::kNone;
  SreBreaker::Options sre;               // when kind == kSre
  ThreeStateBreaker::Options three_state;  // when kind == kThreeState
  OutcomeClassifier classifier;          // with failureCodes/successCodes applied
  CallerDeadline caller_deadline = CallerDeadline::kFailure;
  // breaker.endpoints: per-endpoint breakers (made from the settings above)
  // gate this breaker's rejections; `endpoints` holds their options but
  // not `make` (the client supplies it).
  bool per_endpoint = true;
  EndpointBreakers::Options endpoints;
  // breaker.recoveryProbe (three-state only): set, the breakers are made
  // health_gated and the client probes the server's health service while
  // they are open (RecoveryProbe).
  std::optional<RecoveryProbe::Options> recovery_probe;
  // breaker.enforcement: the method's and its endpoints' breakers reject
  // (enforce), only count what they would reject (shadow), or are off.
  EnforcementMode enforcement = EnforcementMode::kEnforce;

  // Classify()
  //
  // What an attempt that ended with `code` tells the breaker. A caller's
  // cancellation and a deadline already past at the start say nothing about
  // the backend (neutral); a per-attempt timeout is a DEADLINE_EXCEEDED; the
  // call's own deadline is one too unless callerDeadline is NEUTRAL; any
  // other ending is classified by its code.
  //
  // `pushback`: the server's answer carried grpc-retry-pushback-ms (a
  // throttle's RESOURCE_EXHAUSTED, a drain's UNAVAILABLE): load feedback,
  // not a broken backend. A three-state breaker takes such a failure as
  // neutral (as Envoy's outlier detection does not count it: lowering a
  // server's limit must not open every client's breaker, and so keep
  // rejecting after the limit is back); the SRE throttle counts it (a
  // request the backend did not accept is what it adapts to). The
  // client's retry budget and retryThrottling count it either way
  // (docs/accounting.md).
  Outcome Classify(absl::StatusCode code, LocalEnd end, bool pushback = false) const;
};

// CreateBreaker()
//
// The breaker `settings` describe, on `clock`; null for kNone. `seed` seeds
// the SRE breaker's drop decisions. The policy loader validated the options,
// so this cannot fail for settings from a PolicyTable.
std::unique_ptr<Breaker> CreateBreaker(const BreakerSettings& settings, Clock& clock,
                                       uint64_t seed);

// throttle.adaptive: which algorithm, with its options (only those of
// `algorithm` are used; the loader checked them with its Validate()).
struct AdaptiveLimitSettings {
  enum class Algorithm { kGradient, kAimd };
  Algorithm algorithm = Algorithm::kGradient;
  GradientConcurrencyLimiter::Options gradient;
  AimdConcurrencyLimiter::Options aimd;
};

struct ThrottleSettings {
  // 0 = no fixed concurrency limit.
  int max_concurrency = 0;
  // An adaptive concurrency limit instead (max_concurrency is then 0).
  std::optional<AdaptiveLimitSettings> adaptive;
  // 0 = no rate limit. Otherwise TokenBucket::Create(rate_per_second, burst)
  // accepts it: the loader checks TokenBucket::Validate().
  double rate_per_second = 0;
  // Token bucket size when rate_per_second > 0.
  int burst = 0;
  // The pushback a rejection suggests is clamped to [min_pushback,
  // max_pushback].
  absl::Duration min_pushback = absl::Milliseconds(10);
  absl::Duration max_pushback = absl::Seconds(10);
  // throttle.global: the fleet's rate limit in Redis; none when unset.
  std::optional<GlobalThrottleSettings> global;
  // throttle.criticalityShares: how every limit above sheds the less
  // critical calls first (CriticalityShares' defaults when unset).
  CriticalityShares criticality_shares;
  // The enforcement of the throttle's own limits (maxConcurrency, adaptive,
  // ratePerSecond), of throttle.criticalityShares and of throttle.cpu
  // (perCaller's and global's are in their settings).
  EnforcementMode enforcement = EnforcementMode::kEnforce;
  EnforcementMode shares_enforcement = EnforcementMode::kEnforce;
  EnforcementMode cpu_enforcement = EnforcementMode::kEnforce;
  // throttle.perCaller: the same limits for each caller key; none when
  // unset.
  std::optional<PerCallerSettings> per_caller;
  // throttle.cpu.threshold: sheddable calls are refused while the process's
  // CPU utilisation is at or above it (CpuUtilisationMeter::Sheds()); none
  // when unset.
  std::optional<double> cpu_threshold;
  // throttle.loadReport: unary answers carry the scope's load in the
  // endpoint-load-metrics-bin trailer (ORCA). On by default.
  bool load_report = true;
  // throttle.retryShedding: retried attempts judged by smaller shares, and
  // rejections that say "do not retry"; off when unset.
  std::optional<RetryShedding::Options> retry_shedding;
  // throttle.deadlineAdmission: calls whose remaining deadline is below the
  // method's service-time percentile are refused; none when unset.
  std::optional<DeadlineAdmission::Options> deadline_admission;
};

// methodConfig[].criticality (docs/criticality.md).
struct CriticalitySettings {
  // The level of a call without a valid resilience-criticality header.
  Criticality default_level = Criticality::kCritical;
  // The highest level a header may claim; default_level is at most this.
  Criticality ceiling = Criticality::kCritical;

  // Resolve()
  //
  // The level of a call whose header names `claimed` (nullopt: no header,
  // or one that names no level): the claim lowered to the ceiling, or the
  // default without one.
  Criticality Resolve(std::optional<Criticality> claimed) const {
    return claimed.has_value() ? LessCritical(*claimed, ceiling) : default_level;
  }
};

// CreateConcurrencyLimiter()
//
// The concurrency limiter `settings` describe, on `clock`: adaptive,
// fixed, or null when the throttle has no concurrency limit. The policy
// loader validated the settings, so this cannot fail for settings from a
// PolicyTable.
std::unique_ptr<ConcurrencyLimiter> CreateConcurrencyLimiter(const ThrottleSettings& settings,
                                                             Clock& clock);

struct FaultInjectionSettings {
  absl::Duration delay = absl::ZeroDuration();
  double delay_fraction = 0;
  absl::StatusCode abort_code = absl::StatusCode::kOk;  // kOk = no abort
  double abort_fraction = 0;
  uint64_t seed = 1;
};

struct MethodPolicy {
  // Where this entry is in the file, for messages: "methodConfig[2]".
  std::string source;
  // The entry's settings in a canonical form (its proto without its names,
  // serialized deterministically; PolicyCanonicalForms): two policies with
  // the same form behave the same, so a policy update keeps the whole state
  // of a method whose form did not change, and of a changed one the parts
  // whose own settings did not (ClientResilience::Update(),
  // ServerResilience::Update(), docs/operations.md).
  struct CanonicalForms {
    std::string whole;     // every setting
    std::string client;    // what a client applies: all but throttle, fault, criticality
    // What a server applies: throttle, faultInjection, criticality; the
    // throttle's `enforcement` fields aside (set in place, the limits kept).
    std::string server;
    std::string breaker;   // breaker
    std::string retry;     // retryPolicy, hedgingPolicy, retryBudget, timeout
    std::string throttle;  // throttle, its `enforcement` fields aside
    std::string fault;     // faultInjection
  };
  CanonicalForms canonical;
  // gRPC's `timeout`: the call's overall deadline is the earlier of the
  // caller's and call start + timeout. Retries share it.
  std::optional<absl::Duration> timeout;
  std::optional<RetrySettings> retry;
  // Exclusive with `retry`, as in gRPC.
  std::optional<HedgingSettings> hedging;
  // The entry's retryBudget: one per channel and method, for `retry` or
  // `hedging`. The defaults when the entry hedges, or when the file has no
  // retryThrottling and the entry retries (maxAttempts > 1); else only when
  // written.
  std::optional<RetryBudgetSettings> retry_budget;
  // The entry's retryBudget when it sets `ttl`: a budget scaled by the
  // method's own calls (WindowedRetryBudget), one per channel and method;
  // then `retry_budget` is unset.
  std::optional<WindowedRetryBudget::Options> windowed_budget;
  // gRPC's `waitForReady`, applied to every attempt.
  std::optional<bool> wait_for_ready;
  BreakerSettings breaker;
  std::optional<ThrottleSettings> throttle;
  std::optional<FaultInjectionSettings> fault_injection;
  // bulkhead: the client's bound on the calls in flight of each method, per
  // channel (Bulkhead); none when unset.
  std::optional<Bulkhead::Options> bulkhead;
  CriticalitySettings criticality;
  // fallback: a static answer for the unary calls the client chain refused
  // or that failed after their retries (client_interceptors/fallback_stage.h);
  // a fallback registered from code replaces it.
  std::optional<StaticFallback> fallback;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_METHOD_POLICY_H_
