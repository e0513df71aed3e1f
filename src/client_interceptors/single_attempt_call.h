// File: src/client_interceptors/single_attempt_call.h
//
// The call object of a call that is its own one attempt: streams, unary
// calls of methods that are not retried, and unary calls that do not come
// from a generated stub. The stages run in the contract order around the
// call, which goes out as the application made it (no hijack unless the
// breaker rejects it).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SINGLE_ATTEMPT_CALL_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SINGLE_ATTEMPT_CALL_H_

#include <atomic>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/breaker.h"
#include "src/client_interceptors/attempt_timeout.h"
#include "src/client_interceptors/breaker_stage.h"
#include "src/client_interceptors/call_counters.h"
#include "src/client_interceptors/call_environment.h"
#include "src/client_interceptors/call_plan.h"
#include "src/client_interceptors/fallback_stage.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/core/mutex.h"
#include "src/core/timeout_scheduler.h"
#include "src/limits/bulkhead.h"

namespace resilience {

// SingleAttemptCall
//
// The one interceptor of ours on such a call (ResilientCallFactory makes
// it). At the first PRE_SEND_INITIAL_METADATA:
//   1. counters: the call and its one attempt (CallCounters);
//   2. timeout (AttemptTimeout), when the plan has one and the caller's
//      own deadline is not earlier: the policy's `timeout`, or for a unary
//      call its per-attempt timeout when sooner;
//   3. breaker (BreakerStage), when the plan has one: a rejection hijacks
//      the call (no network traffic) and answers UNAVAILABLE "<method>:
//      rejected locally by the circuit breaker (<kind>: <reason>)" with the
//      trailer `x-resilience-local-rejection: breaker`; on every call type
//      and stub flavour (writes fail, reads fail). Decided once: gRPC 1.51
//      repeats PRE_SEND_INITIAL_METADATA on every batch of a hijacked async
//      stream.
//   0. bulkhead, for a unary call of a method with one (ClientMethodState::
//      bulkhead), before the others: with a slot free the call goes on at
//      once; with none it waits in the queue without blocking any thread:
//      Intercept() returns with neither Proceed() nor Hijack(), and the end
//      of the wait resumes the call (Resume()) on the thread that freed a
//      slot (Bulkhead::Leave(), inside another call's end), or, when the
//      wait ends first (min(maxWait, the deadline)), on the TimeoutScheduler's
//      thread, which rejects it. A full queue or an ended wait hijacks the
//      call like the breaker's rejection, with UNAVAILABLE "<method>:
//      rejected locally by the bulkhead (...)" and the trailer
//      `x-resilience-local-rejection: bulkhead`. A call cancelled while it
//      waits ends CANCELLED at once (its timer is moved to now). The slot is
//      given back at POST_RECV_STATUS. A unary call has one batch, so no
//      other batch can reach the call while it waits.
// At POST_RECV_STATUS, the end of a call with a breaker or a timeout is
// classified once (ClassifyAttemptEnd()): the breaker records it, with the
// latency to the first response message (a stream's lifetime is not the
// backend's speed); a deadline of ours becomes DEADLINE_EXCEEDED in the
// chain's style (OwnDeadlineStatus()). Then every call's final status is
// counted, fed to the channel's retryThrottling and to the reconnect watch.
// Breaker events are delivered last, on this thread for a blocking caller,
// else on the events thread.
class SingleAttemptCall final : public grpc::experimental::Interceptor {
 public:
  SingleAttemptCall(grpc::experimental::ClientRpcInfo* info, std::shared_ptr<ClientMethodState> state,
                    const CallPlan& plan, const CallEnvironment& env);
  ~SingleAttemptCall() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // The call's wait for a bulkhead slot: the bulkhead's waiter and the
  // timer that ends the wait.
  struct SlotWait final : Bulkhead::Waiter, TimeoutScheduler::Timer {
    explicit SlotWait(SingleAttemptCall* o) : owner(o) {}
    void SlotGranted() override { owner->OnSlotGranted(); }
    void Fire() override { owner->OnWaitTimer(); }
    SingleAttemptCall* const owner;
  };

  // False when the call waits for a bulkhead slot (then the wait's end
  // resumes it).
  bool Start(grpc::experimental::InterceptorBatchMethods* methods);
  // The stages after the bulkhead: timeout and breaker.
  void Begin();
  // A bulkhead in shadow mode (`mode`; nothing when off): its decision is
  // noted and counted, the call goes at once whatever it is
  // (docs/shadow-mode.md). EndShadowBulkhead() at the call's end.
  void EnterShadowBulkhead(EnforcementMode mode, absl::Duration time_left);
  void EndShadowBulkhead();
  void OnSlotGranted();
  void OnWaitTimer();
  void CancelWait();
  // Goes on with the first batch after the wait: Proceed(), or Hijack() for
  // a rejection.
  void Resume();
  void FillRejection(grpc::experimental::InterceptorBatchMethods* methods);
  void End(grpc::experimental::InterceptorBatchMethods* methods);
  // Fallback (single_attempt_call_fallback.cc): whether the call may fall
  // back (at its start), the refused call's answer (in FillRejection()),
  // and a failed call's (at the end of End()).
  void PrepareFallback(grpc::experimental::InterceptorBatchMethods* methods);
  void RunRejectionFallback();
  void FallBackOnFailure(grpc::experimental::InterceptorBatchMethods* methods,
                         grpc::Status* status);

  grpc::experimental::ClientRpcInfo* const info_;
  // The method's state the call started with, held to its end.
  const std::shared_ptr<ClientMethodState> hold_;
  ClientMethodState& state_;
  const CallEnvironment& env_;
  const bool has_timeout_;
  const bool unretried_stub_;
  CallCounters counters_;
  BreakerStage breaker_;
  AttemptTimeout timeout_;
  Admission admission_;
  absl::Duration limit_ = absl::InfiniteDuration();
  absl::Time sent_at_;  // wall clock, to compare with deadlines
  // When the first response message arrived (breaker clock).
  std::optional<absl::Time> first_response_;
  // PRE_SEND_CANCEL seen (on the canceller's thread).
  std::atomic<bool> cancelled_{false};
  bool started_ = false;
  bool rejected_ = false;
  // What a rejected call answers (breaker, bulkhead, or cancelled while
  // waiting), and who rejected it (no trailer for a cancellation).
  grpc::Status rejection_;
  std::optional<LocalRejector> rejector_;
  // Fallback: a unary call from a generated stub of a method with one;
  // its serialized request and the caller's receive buffer (a
  // protobuf::MessageLite, from the call's PRE_RECV_MESSAGE).
  FallbackStage fallback_;
  bool fallback_possible_ = false;
  bool fallback_ran_ = false;
  grpc::ByteBuffer request_;
  void* recv_message_ = nullptr;

  // Bulkhead (plan.bulkhead).
  const bool bulkhead_;
  bool holds_slot_ = false;  // handed over by the wait's end, read at End()
  bool shadow_queued_ = false;  // a shadow bulkhead's queue place (EndShadowBulkhead())
  SlotWait slot_wait_{this};
  // The first batch, kept while the call waits.
  grpc::experimental::InterceptorBatchMethods* waiting_batch_ = nullptr;
  absl::Time wait_from_;    // bulkhead clock
  bool wait_by_deadline_ = false;  // the deadline, not maxWait, ends the wait
  std::atomic<bool> waiting_{false};
  // Who ends the wait: exactly one of the grant, the timer, and the
  // caller's cancellation (which leaves the resuming to the timer, moved to
  // now). wait_mu_ also orders the wait's start (Enter(), Schedule()) before
  // its end.
  enum class Wait { kNone, kWaiting, kGranted, kCancelled, kDone };
  Mutex wait_mu_;
  Wait wait_ ABSL_GUARDED_BY(wait_mu_) = Wait::kNone;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SINGLE_ATTEMPT_CALL_H_
