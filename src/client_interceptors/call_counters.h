// File: src/client_interceptors/call_counters.h
//
// The one place where the client chain increments the per-method counters
// (GRPC_RESILIENCE_CLIENT_COUNTERS, client_method_state.h) and keeps the
// call-level metrics (final status, latency). Each event of a call has one
// function here; the call objects (SingleAttemptCall, RetriedUnaryCall) call
// them and touch no counter themselves.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_COUNTERS_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_COUNTERS_H_

#include "absl/time/time.h"
#include "grpc_resilience/fallback.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/core/clock.h"
#include "src/retry/retry_decider.h"

namespace resilience {

// CallCounters
//
// The counters of one application call, over its method's state. Not
// thread-safe for one call (used from the call's own hooks or under the
// call's lock); the counters themselves are atomics shared by every call.
class CallCounters {
 public:
  CallCounters(ClientMethodState& state, Clock& clock) : state_(state), clock_(clock) {}

  // The application's call starts (its first PRE_SEND_INITIAL_METADATA):
  // `calls`, and the start of its latency. Idempotent.
  void CallStarted() {
    if (started_) return;
    started_ = true;
    Add(state_.calls);
    if (state_.metrics) start_ = clock_.Now();
  }

  // An attempt is made (a breaker rejection is an attempt too).
  void AttemptMade() { Add(state_.attempts); }

  // A retried call decided on another attempt: `retries`; a hedged call's
  // next hedge also counts in `hedges`.
  void RetryDecided(bool hedge) {
    Add(state_.retries);
    if (hedge) Add(state_.hedges);
  }

  void RejectedByBreaker() { Add(state_.rejected_by_breaker); }
  void BreakerRejectionWaived() { Add(state_.breaker_rejections_waived); }
  void AttemptTimedOut() { Add(state_.attempt_timeouts); }
  void NotRetriedStub() { Add(state_.not_retried_stub_calls); }
  void BulkheadWaited() { Add(state_.bulkhead_waits); }
  void RejectedByBulkhead() { Add(state_.rejected_by_bulkhead); }
  // Shadow mode: the breaker or the bulkhead would have rejected the call
  // (or attempt) and let it through (MethodEnforcement).
  void ShadowRejectedByBreaker(RejectReason reason) {
    state_.tally->enforcement.CountBreaker(reason, clock_.Now());
  }
  void ShadowRejectedByBulkhead(ShadowBulkheadReason reason) {
    state_.tally->enforcement.CountBulkhead(reason, clock_.Now());
  }
  // The call was answered by its method's fallback (its original status is
  // still what CallEnded() counts).
  void FellBack(FallbackCause cause) {
    switch (cause) {
      case FallbackCause::kBreaker:
        return Add(state_.fallbacks_breaker);
      case FallbackCause::kBulkhead:
        return Add(state_.fallbacks_bulkhead);
      case FallbackCause::kRetryBudget:
        return Add(state_.fallbacks_retry_budget);
      case FallbackCause::kFailed:
        return Add(state_.fallbacks_failed);
    }
  }

  // The call's retries (or hedges) stopped for `verdict`: counted for a
  // spent budget and a pushback stop, once per call.
  void RetriesStopped(RetryVerdict verdict) {
    if (stop_counted_) return;
    if (verdict == RetryVerdict::kBudgetSpent) {
      stop_counted_ = true;
      Add(state_.retry_budget_exhausted);
    } else if (verdict == RetryVerdict::kPushbackStop) {
      stop_counted_ = true;
      Add(state_.pushback_stops);
    }
  }

  // The call has the final status `code` the application gets (after our
  // rewrites): calls by code and the latency, with metrics on. Once.
  void CallEnded(int code) {
    if (ended_) return;
    ended_ = true;
    if (!state_.metrics) return;
    state_.meter.CountStatus(code);
    if (started_) state_.meter.ObserveLatency(clock_.Now() - start_);
  }

 private:
  static void Add(std::atomic<int64_t>& counter) {
    counter.fetch_add(1, std::memory_order_relaxed);
  }

  ClientMethodState& state_;
  Clock& clock_;
  absl::Time start_;
  bool started_ = false;
  bool ended_ = false;
  bool stop_counted_ = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_COUNTERS_H_
