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
#include "src/breaker/recovery_probe.h"
#include "src/client_interceptors/method_enforcement.h"
#include "src/client_interceptors/reconnect_watch.h"
#include "src/core/random_source.h"
#include "src/limits/bulkhead.h"
#include "src/retry/hedging_decider.h"
#include "src/retry/retry_decider.h"
#include "src/routing/endpoint_picker.h"
#include "src/core/counter_list.h"
#include "src/metrics/method_meter.h"
#include "grpc_resilience/policy.h"
#include "src/policy/method_policy.h"

namespace resilience {

class HealthProbeSender;  // health_probe_sender.h
class HealthNameCheck;    // health_name_check.h

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
  X(rejected_by_bulkhead)                                                            \
  /* Calls answered by the method's fallback, by cause (FallbackCause): the */    \
  /* chain refused them (breaker, bulkhead, spent retry budget) or they */         \
  /* failed after their retries. Their original status is counted too. */         \
  X(fallbacks_breaker)                                                              \
  X(fallbacks_bulkhead)                                                             \
  X(fallbacks_retry_budget)                                                         \
  X(fallbacks_failed)

// MakeHedgingDecider()
//
// The decider for the loaded hedgingPolicy of `policy`, spending its
// retryBudget (if any; a windowed one on `clock`) and held by `throttle`
// (the channel's retryThrottling, null when none).
inline std::shared_ptr<HedgingDecider> MakeHedgingDecider(const MethodPolicy& policy,
                                                          RetryBudget* throttle, Clock& clock) {
  const HedgingSettings& hedging = *policy.hedging;
  HedgingDecider::Options options;
  options.max_attempts = hedging.max_attempts;
  options.delay = hedging.delay;
  options.non_fatal_codes = hedging.non_fatal_status_codes;
  options.adaptive_delay = hedging.adaptive_delay;
  options.budget = policy.retry_budget;
  options.windowed_budget = policy.windowed_budget;
  options.clock = &clock;
  options.throttle = throttle;
  return std::make_shared<HedgingDecider>(options);
}

// ClientMethodTally
//
// The counters of one method on one channel: they outlive a policy update,
// whatever it changed (every ClientMethodState of the method, old and new,
// counts into the same tally), so a counter never goes back.
struct ClientMethodTally {
  // calls, attempts, retries, ...: GRPC_RESILIENCE_CLIENT_COUNTERS.
  GRPC_RESILIENCE_CLIENT_COUNTERS(GRPC_RESILIENCE_ATOMIC_COUNTER)
  // Calls by the final status the application got, and their latency from
  // start to final status (retries and backoff included). Kept by
  // CallCounters (call_counters.h).
  MethodMeter meter;
  // Breaker state changes, indexed [from][to] by BreakerState; counted by
  // the breaker's listener.
  std::array<std::array<std::atomic<int64_t>, 3>, 3> breaker_transitions{};
  // Health probes of breaker.recoveryProbe answered, indexed [breaker]
  // [answer]: breaker 0 the method's, 1 its endpoints' (summed); answer by
  // RecoveryProbe::Answer. Counted by the probe's callback (BreakerStage).
  std::array<std::array<std::atomic<int64_t>, 4>, 2> health_probes{};
  // The enforcement modes of the method's breaker and bulkhead and their
  // shadow decisions: kept across updates like the counters, so that a
  // switch (an operator's, or the file's) applies in place.
  MethodEnforcement enforcement;
};

// What the interceptors of one method need, resolved once per method and
// again at each policy update that changes the method's policy (the whole
// object is replaced: MethodCache::Replace(); a call keeps the one it
// started with).
//
// With ClientResilience::Options::metrics, every method called has one, with
// or without a policy: then `policy` is null, nothing else is set but the
// counters, and only the SingleAttemptCall that counts (single_attempt_call.h) sees
// its calls.
struct ClientMethodState {
  // `tally`: the method's counters, kept from its previous state (a new
  // one when the method had none).
  explicit ClientMethodState(
      std::shared_ptr<ClientMethodTally> kept_tally = std::make_shared<ClientMethodTally>())
      : tally(std::move(kept_tally)) {}
  ClientMethodState(const ClientMethodState&) = delete;
  ClientMethodState& operator=(const ClientMethodState&) = delete;

  // First member: the references below point into it.
  const std::shared_ptr<ClientMethodTally> tally;
  std::string method;
  // The set `policy` points into, kept alive with this state.
  PolicySet policies;
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
  // A fallback's OK answer could not replace a failure (grpc_internals.h,
  // AcceptFilledMessage()): said once.
  std::atomic<bool> reported_fallback_limit{false};
  RetrySettings retry;  // max_attempts 1 when the policy has no retryPolicy
  // null: no breaker. Shared with the method's next state when an update
  // leaves the breaker's settings as they were.
  std::shared_ptr<Breaker> breaker;
  // With a breaker and breaker.endpoints.enabled: the method's breakers per
  // endpoint, which decide when `breaker` may reject (BreakerStage).
  std::shared_ptr<EndpointBreakers> endpoint_breakers;
  // With the library's endpoint picker (ClientResilienceImpl::router()):
  // the method's own, kept by the router across reloads.
  std::shared_ptr<EndpointPicker> picker;
  // With breaker.recoveryProbe (three-state): when to probe the server's
  // health while `breaker` is open, and what the answer does to it
  // (RecoveryProbe); shared with the next state together with `breaker`.
  // `probe_sender` sends the probes (null: the channel was not made by
  // CreateResilientChannel, so nothing is probed and the breaker's open
  // period ends by itself).
  std::shared_ptr<RecoveryProbe> recovery_probe;
  HealthProbeSender* probe_sender = nullptr;
  // The backoff's jitter draws, and the retry policy with its backoff and
  // budget (set with a policy); shared, with the hedging decider, with the
  // method's next state when an update leaves the retry settings (and the
  // channel's retryThrottling) as they were.
  std::shared_ptr<RandomSource> random;
  std::shared_ptr<RetryDecider> retry_decider;
  // The hedging policy with its budget, when the policy has a hedgingPolicy
  // (then wraps_unary is set and RetriedUnaryCall hedges the unary
  // calls instead of retrying them).
  std::shared_ptr<HedgingDecider> hedging_decider;
  // The channel's retryThrottling (null: none). The deciders feed it with
  // the attempts of RetriedUnaryCalls; the SingleAttemptCall
  // that meters any other call feeds it with that call (ThrottleHears()).
  // `throttle_owner` keeps it alive while this state lives.
  RetryBudget* throttle = nullptr;
  std::shared_ptr<RetryBudget> throttle_owner;
  // The channel's: told of every call and attempt that ends UNAVAILABLE
  // (our breaker's rejections included) by the call object of the
  // call, for each attempt of a RetriedUnaryCall. Never null.
  ReconnectWatch* reconnect = nullptr;
  // The channel's check of its healthCheckConfig.serviceName, told of every
  // UNAVAILABLE like `reconnect`; null: none (HealthNameCheck).
  HealthNameCheck* health_check = nullptr;
  // The policy's bulkhead (null: none): a slot per unary call, taken by its
  // call object before its first attempt and given back when it ends.
  std::shared_ptr<Bulkhead> bulkhead;

  // The counters, in the tally (see ClientMethodTally).
#define GRPC_RESILIENCE_TALLY_COUNTER(name) std::atomic<int64_t>& name = tally->name;
  GRPC_RESILIENCE_CLIENT_COUNTERS(GRPC_RESILIENCE_TALLY_COUNTER)
#undef GRPC_RESILIENCE_TALLY_COUNTER
  MethodMeter& meter = tally->meter;
  std::array<std::array<std::atomic<int64_t>, 3>, 3>& breaker_transitions =
      tally->breaker_transitions;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CLIENT_METHOD_STATE_H_
