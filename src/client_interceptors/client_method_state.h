// File: src/client_interceptors/client_method_state.h
//
// The per-method state the client interceptors of one channel share
// (internal: reached through ClientResilienceImpl by the interceptors only).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_METHOD_STATE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_METHOD_STATE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"

#include "src/breaker/breaker.h"
#include "src/breaker/endpoint_breakers.h"
#include "src/client_interceptors/reconnect_watch.h"
#include "src/core/random_source.h"
#include "src/limits/bulkhead.h"
#include "src/retry/hedging_decider.h"
#include "src/retry/retry_decider.h"
#include "src/core/counter_list.h"
#include "src/metrics/method_meter.h"
#include "src/policy/method_policy.h"

namespace resilience {

// The counters of one method on one channel, declared once (counter_list.h):
// the atomics of ClientMethodState the interceptors count with, and the copy
// into the fields of the public ClientMethodStats
// (grpc_resilience/client_resilience.h) that ClientResilience::Stats()
// returns, which names them one by one (client_resilience_impl.cc checks
// that the two lists agree).
#define GRPC_RESILIENCE_CLIENT_COUNTERS(X)                                             \
  /* Logical calls the application made (each unary call once, however many */      \
  /* attempts it took), counted when they start. */                                 \
  X(calls)                                                                          \
  /* Attempts made, with or without a breaker: each attempt of a retried call */    \
  /* (a RetriedUnaryCall), and the one attempt of every other call, including */    \
  /* those the breaker rejected. attempts - retries = calls that made an */         \
  /* attempt. Every counter is incremented by CallCounters (call_counters.h) */     \
  /* only. */                                                                       \
  X(attempts)                                                                       \
  /* Attempts after a call's first: retries, or a hedged call's hedges. */         \
  X(retries)                                                                        \
  /* Of those, a hedged call's hedges (retries - hedges = retries proper). */      \
  X(hedges)                                                                         \
  X(rejected_by_breaker)                                                            \
  /* Attempts the breaker rejected but that went out anyway: the service as a */   \
  /* whole was not failing (per-endpoint breakers, EndpointBreakers). */              \
  X(breaker_rejections_waived)                                                      \
  /* Attempts that hit their per-attempt timeout. */                                \
  X(attempt_timeouts)                                                               \
  /* Retries not made because the retry budget was spent (hedged calls: */         \
  /* calls whose hedges the budget stopped). */                                     \
  X(retry_budget_exhausted)                                                         \
  /* Retries not made because the server's pushback said not to. */                 \
  X(pushback_stops)                                                                 \
  /* Unary calls of a retried method that were passed through without retry */     \
  /* because they did not come from a protobuf generated stub (e.g. a */            \
  /* GenericStub); see grpc_internals.h. */                                              \
  X(not_retried_stub_calls)                                                         \
  /* Calls that waited in the bulkhead's queue for a slot (Bulkhead). */            \
  X(bulkhead_waits)                                                                 \
  /* Calls the bulkhead rejected (queue full, or the wait ended without a */        \
  /* slot); they never reached the network. */                                      \
  X(rejected_by_bulkhead)

// MakeHedgingDecider()
//
// The decider for a loaded hedgingPolicy, spending `budget` (the entry's
// retryBudget, if any) and held by `throttle` (the channel's
// retryThrottling, null when none).
inline std::unique_ptr<HedgingDecider> MakeHedgingDecider(
    const HedgingSettings& hedging, const std::optional<RetryBudgetSettings>& budget,
    RetryBudget* throttle) {
  HedgingDecider::Options options;
  options.max_attempts = hedging.max_attempts;
  options.delay = hedging.delay;
  options.non_fatal_codes = hedging.non_fatal_status_codes;
  options.adaptive_delay = hedging.adaptive_delay;
  options.budget = budget;
  options.throttle = throttle;
  return std::make_unique<HedgingDecider>(options);
}

// What the interceptors of one method need, resolved once per method.
//
// With ClientResilience::Options::metrics, every method called has one, with
// or without a policy: then `policy` is null, nothing else is set but the
// counters, and only the SingleAttemptCall that counts (single_attempt_call.h) sees
// its calls.
struct ClientMethodState {
  std::string method;
  const MethodPolicy* policy = nullptr;  // null: no policy, the calls are only counted
  // Calls are counted by final status and latency (`meter`).
  bool metrics = false;
  // Unary calls of this method are RetriedUnaryCalls (the policy
  // allows more than one attempt); it then owns their attempts, per-attempt
  // timeouts and the call's deadline. Otherwise their SingleAttemptCall
  // enforces those.
  bool wraps_unary = false;
  // The method is in protobuf's generated descriptor pool (grpc_internals.h).
  bool protobuf_method = false;
  // The name address a generated stub's calls carry, once seen (grpc_internals.h);
  // a call with this address needs no further check.
  std::atomic<const char*> generated_stub_name{nullptr};
  std::atomic<bool> reported_stub_pass_through{false};
  RetrySettings retry;  // max_attempts 1 when the policy has no retryPolicy
  std::unique_ptr<Breaker> breaker;  // null: no breaker
  // With a breaker and breaker.endpoints.enabled: the method's breakers per
  // endpoint, which decide when `breaker` may reject (BreakerStage).
  std::unique_ptr<EndpointBreakers> endpoint_breakers;
  std::unique_ptr<RandomSource> random;  // the backoff's jitter draws
  // The retry policy with its backoff and budget (set with a policy).
  std::unique_ptr<RetryDecider> retry_decider;
  // The hedging policy with its budget, when the policy has a hedgingPolicy
  // (then wraps_unary is set and RetriedUnaryCall hedges the unary
  // calls instead of retrying them).
  std::unique_ptr<HedgingDecider> hedging_decider;
  // The channel's retryThrottling (null: none). The deciders feed it with
  // the attempts of RetriedUnaryCalls; the SingleAttemptCall
  // that meters any other call feeds it with that call (ThrottleHears()).
  RetryBudget* throttle = nullptr;
  // The channel's: told of every call and attempt that ends UNAVAILABLE
  // (our breaker's rejections included) by the call object of the
  // call, for each attempt of a RetriedUnaryCall. Never null.
  ReconnectWatch* reconnect = nullptr;
  // The policy's bulkhead (null: none): a slot per unary call, taken by its
  // call object before its first attempt and given back when it ends.
  std::unique_ptr<Bulkhead> bulkhead;

  // calls, attempts, retries, ...: GRPC_RESILIENCE_CLIENT_COUNTERS.
  GRPC_RESILIENCE_CLIENT_COUNTERS(GRPC_RESILIENCE_ATOMIC_COUNTER)

  // With `metrics`: calls by the final status the application got, and
  // their latency from start to final status (retries and backoff
  // included). Kept by CallCounters (call_counters.h).
  MethodMeter meter;
  // Breaker state changes, indexed [from][to] by BreakerState; counted by
  // the breaker's listener.
  std::array<std::array<std::atomic<int64_t>, 3>, 3> breaker_transitions{};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_METHOD_STATE_H_
