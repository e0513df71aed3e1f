// File: src/server_interceptors/server_method_state.h
//
// The per-method state the server interceptors share (internal: reached
// through ServerResilienceImpl by the interceptors only): the limits of a
// scope, a method's counters (its tally, which outlives policy updates) and
// what its calls need.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_METHOD_STATE_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_METHOD_STATE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/policy.h"
#include "src/core/clock.h"
#include "src/core/counter_list.h"
#include "src/core/random_source.h"
#include "src/core/serial_executor.h"
#include "src/engine/scope_limiters.h"
#include "src/global_limits/global_rate_limit.h"
#include "src/limits/call_duration_estimate.h"
#include "src/limits/concurrency_limiter.h"
#include "src/limits/cpu_utilisation_meter.h"
#include "src/limits/event_rate.h"
#include "src/limits/criticality_shares.h"
#include "src/limits/deadline_admission.h"
#include "src/limits/per_caller_limits.h"
#include "src/limits/retry_shedding.h"
#include "src/limits/token_bucket.h"
#include "src/metrics/method_meter.h"
#include "src/policy/method_policy.h"
#include "src/server_interceptors/rejection_messages.h"
#include "src/server_interceptors/scope_enforcement.h"
#include "src/server_interceptors/shadow_log.h"

namespace resilience {

// The counters of one method, declared once (counter_list.h): the atomics
// of ServerMethodState the interceptors count with, and the copy to the
// fields of the public ServerMethodStats (grpc_resilience/server_resilience.h)
// that ServerResilienceImpl::Stats() returns, which names each of them.
#define GRPC_RESILIENCE_SERVER_COUNTERS(X)                                             \
  /* Calls let through to the handler (by the throttle; without one, every */       \
  /* call that fault injection did not abort). */                                   \
  X(admitted)                                                                       \
  X(rejected_concurrency)                                                           \
  X(rejected_rate)                                                                  \
  /* Sheddable calls the CPU gate refused (throttle.cpu). */                        \
  X(rejected_cpu)                                                                   \
  /* Retried attempts a limit refused under throttle.retryShedding. */              \
  X(rejected_retry)                                                                 \
  /* Calls refused for a remaining deadline below the method's service-time */      \
  /* percentile (throttle.deadlineAdmission). */                                     \
  X(rejected_deadline)                                                              \
  /* Calls whose resilience-criticality header named no level (judged at */       \
  /* the method's default criticality). */                                          \
  X(criticality_invalid)                                                            \
  /* Admitted calls whose status has not been sent yet (or, for a call that */      \
  /* closed without one, whose handler has not returned yet). */                    \
  X(in_flight)                                                                      \
  X(faults_aborted)                                                                 \
  X(faults_delayed)                                                                 \
  /* Delayed calls whose deadline passed during the delay: handler skipped. */      \
  X(expired_while_delayed)                                                          \
  /* Calls a policy in shadow would have rejected (and let through), by */          \
  /* policy: the throttle's own limits, criticalityShares, cpu, perCaller, */      \
  /* global (docs/shadow-mode-server.md). */                                        \
  X(shadow_throttle)                                                                \
  X(shadow_shares)                                                                  \
  X(shadow_cpu)                                                                     \
  X(shadow_per_caller)                                                              \
  X(shadow_global)

// The limits of one scope: a method, a whole service, or the default. Its
// limiters (ScopeLimiters, made by LimiterFactory) are shared with the
// scope's next ScopeLimits when a policy update leaves them meaningful
// (ServerResilienceImpl::LimitsFor()); the rest is the server's.
struct ScopeLimits : ScopeLimiters {
  std::string scope;
  // How each of the limiters sheds the less critical calls first.
  CriticalityShares shares;
  // throttle.retryShedding: the shares retried attempts are judged by, and
  // whether rejections say "do not retry"; off by default.
  RetryShedding retry_shedding;
  // throttle.cpu: sheddable calls refused while the process's CPU
  // utilisation (`cpu_meter`, the server's, never null when this is set) is
  // at or above this; none when unset.
  std::optional<double> cpu_threshold;
  CpuUtilisationMeter* cpu_meter = nullptr;
  // The throttle's settings these were made for
  // (MethodPolicy::CanonicalForms::throttle).
  std::string form;
  // For ResilienceEvents: rejecting, and not yet kThrottleQuietPeriod
  // without a rejection since. The times are the clock's, in nanoseconds
  // since the epoch; `episode_rejections` counts since the episode began.
  std::atomic<bool> saturated{false};
  std::atomic<int64_t> saturated_since_ns{0};
  std::atomic<int64_t> last_rejection_ns{0};
  std::atomic<uint64_t> episode_rejections{0};
  // How long admitted calls take (admission to status); the pushback of a
  // concurrency rejection.
  CallDurationEstimate durations;
  // Bounds of the pushback.
  absl::Duration min_pushback;
  absl::Duration max_pushback;
  // throttle.loadReport: unary answers carry the scope's load
  // (ScopeLoadReport()); its rejections are counted in `rejection_rate`
  // (the report's eps), on the throttle's clock.
  bool load_report = false;
  EventRate rejection_rate;
  // Each policy's enforce, shadow or off, switched in place
  // (ServerResilience::Update(), SetEnforcement()); the calls they would
  // have rejected in shadow, logged.
  ScopeEnforcement enforcement;
  ShadowLog shadow_log;
};

// ServerMethodTally
//
// The counters of one method: they outlive a policy update, whatever it
// changed (every ServerMethodState of the method, old and new, counts into
// the same tally), so a counter never goes back and `in_flight` is
// decremented by the calls that incremented it.
struct ServerMethodTally {
  // admitted, rejected_concurrency, ...: GRPC_RESILIENCE_SERVER_COUNTERS.
  GRPC_RESILIENCE_SERVER_COUNTERS(GRPC_RESILIENCE_ATOMIC_COUNTER)
  // Calls by the status sent, and the handler latency of admitted calls.
  // Kept by one interceptor per call (ServerCallMeter).
  MethodMeter meter;
};

// What the interceptors of one method need, resolved once per method and
// again at each policy update that changes the method's policy (the whole
// object is replaced: MethodCache::Replace(); a call keeps the one it
// started with). With metrics on, every method has one, with or without a
// policy (then `limits` and `fault` are null and only the counters are
// used).
struct ServerMethodState {
  // `tally`: the method's counters, kept from its previous state (a new
  // one when the method had none).
  explicit ServerMethodState(
      std::shared_ptr<ServerMethodTally> kept_tally = std::make_shared<ServerMethodTally>())
      : tally(std::move(kept_tally)) {}
  ServerMethodState(const ServerMethodState&) = delete;
  ServerMethodState& operator=(const ServerMethodState&) = delete;

  // First member: the references below point into it.
  const std::shared_ptr<ServerMethodTally> tally;
  std::string method;
  // The set `fault` points into, kept alive with this state.
  PolicySet policies;
  // The canonical form of the policy's server part (empty: no policy with
  // a throttle or fault injection); an update that leaves it keeps this
  // state whole.
  std::string form;
  // The server's clock (given to the internal AddServerInterceptors(),
  // server_interceptors.h): its Now() times handlers and throttles.
  Clock* clock = &Clock::Real();
  // Calls are counted by status sent and handler latency (`meter`).
  bool metrics = false;
  // Throttle events go to `listener` through `events`, off the call's
  // thread, in order; both null: nobody listens.
  SerialExecutor* events = nullptr;
  ResilienceEvents* listener = nullptr;
  ScopeLimits* limits = nullptr;                       // null: no throttle
  // The rate limits' rejection messages for this method under `limits`.
  RejectionMessages rejections;
  // The same for retried attempts under throttle.retryShedding.
  RejectionMessages retry_rejections;
  // How a call's resilience-criticality header is read (the method's
  // methodConfig[].criticality).
  CriticalitySettings criticality;
  // Calls the throttle rejected, by criticality; whether any call carried
  // the header (its metrics are shown from then on).
  std::array<std::atomic<int64_t>, kCriticalityLevels> rejected_by_criticality{};
  std::atomic<bool> criticality_seen{false};
  std::shared_ptr<ScopeLimits> limits_owner;           // keeps `limits` alive
  const FaultInjectionSettings* fault = nullptr;      // null: no faults
  // Shared with the method's next state when an update leaves the fault
  // injection's settings as they were.
  std::shared_ptr<RandomSource> fault_random;
  // throttle.deadlineAdmission: the method's service times and refusals
  // (per method, whatever the throttle's scope); null: none. Shared with
  // the method's next state when an update leaves its options as they were.
  std::shared_ptr<DeadlineAdmission> deadline_admission;
  // Served by a GuardedService: rejected calls skip the handler, and sync
  // calls are held on their own handler thread.
  bool guarded = false;

  // The counters, in the tally (see ServerMethodTally).
#define GRPC_RESILIENCE_TALLY_COUNTER(name) std::atomic<int64_t>& name = tally->name;
  GRPC_RESILIENCE_SERVER_COUNTERS(GRPC_RESILIENCE_TALLY_COUNTER)
#undef GRPC_RESILIENCE_TALLY_COUNTER
  MethodMeter& meter = tally->meter;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_METHOD_STATE_H_
