// File: src/client_interceptors/retried_unary_call.h
//
// The call object of a retried (or hedged) unary call: the execution that
// makes its attempts, each with its own deadline (the per-attempt timeout),
// its own breaker admission, counted in one place.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRIED_UNARY_CALL_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRIED_UNARY_CALL_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/impl/codegen/channel_interface.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/breaker.h"
#include "src/client_interceptors/attempt_completion_queue.h"
#include "src/client_interceptors/attempt_end.h"
#include "src/client_interceptors/breaker_stage.h"
#include "src/client_interceptors/call_counters.h"
#include "src/client_interceptors/call_environment.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/client_interceptors/fallback_stage.h"
#include "src/client_interceptors/grpc_internals.h"
#include "src/client_interceptors/local_status.h"
#include "src/core/mutex.h"
#include "src/limits/bulkhead.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {

// RetriedUnaryCall
//
// The one interceptor of ours on such a call (ResilientCallFactory makes
// it); its stages, in the contract order: retry/hedging (the deciders of
// src/retry) -> per-attempt timeout (each attempt's real deadline) ->
// breaker (BreakerStage, per attempt) -> metrics (CallCounters, per call).
// Takes the unary calls of a method whose policy allows more than one
// attempt (retryPolicy.maxAttempts > 1, or a hedgingPolicy), from protobuf
// generated stubs (grpc_internals.h). At the call's PRE_SEND_INITIAL_METADATA it
// takes the caller's metadata, serialized request and deadline, and does not
// Proceed(): it hijacks the call and makes the attempts itself. gRPC 1.51
// leaves no cheaper way: a call that went out as the caller's own cannot be
// given a later attempt's response (docs/retry-cost.md).
//
// Each attempt:
//   1. asks the method's breaker (if any). A rejection builds no call at
//      all: the attempt ends at once as UNAVAILABLE "rejected locally", and
//      a local rejection is never retried (nor followed by more hedges);
//   2. is a new ClientContext (caller metadata, credentials and
//      compression copied; deadline = min(call deadline, now +
//      perAttemptTimeout); waitForReady from the policy) sent on the
//      channel past our interceptor (GetInterceptedChannel()), so that only
//      the application's inner interceptors see it: its deadline is its
//      timeout; its end is classified once (ClassifyAttemptEnd()) and
//      reported to the breaker. It carries kAttemptSuffix
//      (grpc_internals.h), so our factory never takes it. Attempt N+1 carries
//      `grpc-previous-rpc-attempts: N` and `x-retry-attempt: N`;
//   3. ends in the method's decider (src/retry): RetryDecider::Decide()
//      says whether and after how long to retry; with a hedgingPolicy,
//      HedgingDecider says when the next hedge goes out (its timer, or at
//      once after a non-fatal code) and which end decides the call. Attempts
//      still running when the call is decided are cancelled (TryCancel())
//      and drained before the call completes; the breaker hears such a
//      loser as neutral.
// The call's deadline is the caller's, or the policy's `timeout` when that
// comes first. The deciding attempt's status, initial metadata, trailers
// and response become the call's.
//
// One runner serves both policies: every attempt and the call's timer (a
// retry backoff or the hedging delay, a grpc::Alarm) complete on one
// completion queue as AttemptCompletionQueue::Tag events, which update the
// state under `mu_`; what follows (sending attempts, cancelling them,
// arming the timer) is done outside the lock (Actions), and so is the
// delivery of breaker events (BreakerEventQueue): the breaker's listener
// only queues them while Admit()/Record() run under `mu_`. Where the events
// are polled:
//   - a blocking (sync stub) caller waits on its own thread anyway, so its
//     attempts and timer complete on that thread's completion queue (one
//     per caller thread, reused by its calls), polled right there: no other
//     thread is involved (grpc_internals.h, CallerBlocks()); breaker events
//     are delivered on that thread too;
//   - an async stub's caller polls its own completion queue for the call:
//     its attempts complete there (grpc_internals.h, CallerQueue() and
//     SilentCompletion), handled inside the caller's Next() and never
//     returned by it, so no other thread is woken for them; its timers
//     complete on the AttemptCompletionQueue's thread (a grpc::Alarm's tag
//     would be returned by the caller's Next()); breaker events go to the
//     EventsThread;
//   - a callback stub's call completes on the threads gRPC runs callbacks
//     on: its attempts are made with the callback API and complete there
//     too (grpc_internals.h, CallerUsesCallbacks()), so the call's own
//     completion needs no other thread; timers and breaker events as for
//     an async caller;
//   - any other caller (gRPC other than 1.51) must not be blocked: its
//     events complete on the AttemptCompletionQueue's thread, which runs no
//     user code: breaker events go to the events thread.
// Caller cancellation (PRE_SEND_CANCEL, on the canceller's thread) cancels
// the attempts in flight and the timer at once.
//
// Bulkhead (a policy's `bulkhead`): the call takes one slot before its
// first attempt and gives it back when it has ended, so its retries and
// hedges run inside it. With no slot free it waits in the bulkhead's queue
// as a timer of its own (like a backoff, so no thread blocks but a sync
// caller's, which polls its own queue anyway): a slot freed by another
// call's end cancels the timer, whose event then starts the call; the timer
// firing first (min(maxWait, the deadline)) rejects it, as does a full
// queue: UNAVAILABLE "<method>: rejected locally by the bulkhead (...)",
// trailer `x-resilience-local-rejection: bulkhead`, no attempt made.
//
// Lifetime: `outstanding_` counts the events still to come (attempts in
// flight, timers set) plus, for a non-blocking caller, the handler running.
// When it reaches zero the call is decided and nothing refers to `this`:
// Hijack() is then the last use of `this` (the call may complete and
// destroy the interceptor as soon as it runs). Streaming calls are not
// retried here (their messages would have to be buffered and replayed);
// gRPC's built-in retry takes those (builtin_retry_config.h).
class RetriedUnaryCall final : public grpc::experimental::Interceptor {
 public:
  RetriedUnaryCall(grpc::experimental::ClientRpcInfo* info, std::shared_ptr<ClientMethodState> state,
                   const CallEnvironment& env);
  ~RetriedUnaryCall() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // One attempt: its call and what it brought back.
  struct Attempt final : AttemptCompletionQueue::Tag {
    explicit Attempt(RetriedUnaryCall* o) : owner(o), on_caller_queue(this) {}
    void Done(bool /*ok: always true for a unary Finish()*/) override {
      owner->OnAttemptDone(this);
    }

    RetriedUnaryCall* const owner;
    // Its completion on an async caller's queue (caller_queue_).
    internal::SilentCompletion on_caller_queue;
    // Held in the attempt (no allocation of its own); empty: rejected locally.
    std::optional<grpc::ClientContext> context;
    // Lives in the attempt's call arena: declared after the context, so it
    // is destroyed first.
    std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> reader;
    grpc::ByteBuffer response;  // written by the call, read after it ended
    grpc::Status status;        // likewise
    Admission admission;        // from the breaker
    // The endpoint the router picked (CallEnvironment::router); empty: the
    // attempt goes on the channel past our interceptor, as gRPC routes it.
    EndpointRouter::Route route;
    absl::Time sent_at;         // wall clock, for deadlines
    absl::Time sent_monotonic;  // for its latency
    absl::Time deadline = absl::InfiniteFuture();
    bool per_attempt_deadline = false;
    bool rejected_locally = false;
    bool forced_out = false;  // rejected: every endpoint is forced open
    bool ended = false;   // guarded by the owner's mu_
    bool loser = false;   // cancelled because another attempt decided the call
  };

  // The call's timer: a retry backoff or the hedging delay.
  struct Timer final : AttemptCompletionQueue::Tag {
    explicit Timer(RetriedUnaryCall* o) : owner(o) {}
    void Done(bool fired) override { owner->OnTimer(this, fired); }

    RetriedUnaryCall* const owner;
    grpc::Alarm alarm;
    absl::Time at;
  };

  // The call's wait for a bulkhead slot (ClientMethodState::bulkhead).
  struct SlotWait final : Bulkhead::Waiter {
    explicit SlotWait(RetriedUnaryCall* o) : owner(o) {}
    void SlotGranted() override { owner->OnSlotGranted(); }
    RetriedUnaryCall* const owner;
  };

  // What a state change leaves to do outside the lock, in this order.
  // Inlined: one per event, on the stack, without an allocation for the
  // usual one attempt to send or two to cancel.
  struct Actions {
    absl::InlinedVector<grpc::ClientContext*, 2> cancel;  // TryCancel()
    grpc::Alarm* cancel_timer = nullptr;
    Timer* arm = nullptr;                  // Set() for arm->at
    absl::InlinedVector<Attempt*, 1> send;  // create the call and start it
  };

  void Start(grpc::experimental::InterceptorBatchMethods* methods);
  void Cancel();
  void OnAttemptDone(Attempt* attempt);
  void OnTimer(Timer* timer, bool fired);
  // Ends one event: the last one (for a non-blocking caller) hijacks.
  void Release();
  void Execute(const Actions& actions);
  // Bulkhead: a slot freed for this waiting call (on the thread that freed
  // it); the slot given back once the call has ended (no lock held).
  void OnSlotGranted();
  void LeaveBulkhead();
  // Delivers breaker events queued meanwhile; no lock held.
  void DeliverEvents() { env_.DeliverEvents(caller_blocks_); }

  // State changes, under mu_.
  // Makes the next attempt: into actions.send, or ended at once (breaker
  // rejection; cancelled or past the deadline before it could start).
  void Launch(Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The call may go: its first attempt, or hedging's start.
  void Begin(Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The bulkhead's part of the start: Begin() now, wait for a slot, or
  // reject the call.
  void EnterBulkhead(Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A bulkhead in shadow mode (`mode`; nothing when off): its decision is
  // noted and counted, the call goes at once whatever it is.
  void EnterShadowBulkhead(EnforcementMode mode, absl::Duration time_left)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The wait's timer came (fired, or cancelled by the grant or the caller).
  void WaitEnded(Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Ended(Attempt& attempt, Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hedging: applies the decider's step; `last` is the attempt that just
  // ended (null when none did).
  void ApplyHedgeStep(const HedgeStep& step, Attempt* last, const AttemptOutcome& outcome,
                      Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The call is decided: `status` is final; other attempts are cancelled.
  void Finish(grpc::Status status, Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ArmTimer(absl::Duration delay, bool backoff, Actions& actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DisarmTimer(Actions& actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int InFlight() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  grpc::Status FinalStatus(const RetryDecision& decision, grpc::Status last)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FillHijackedReceive(grpc::experimental::InterceptorBatchMethods* methods);
  // The router's part of an attempt's end (CallEnvironment::router).
  void ReportToRouter(const Attempt& a, const AttemptEnd& end, LocalEnd local)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  grpc::Status ForcedOutStatus() const;
  // In the re-entry, before FillHijackedReceive(): the method's fallback
  // for a call that did not succeed (retried_unary_call_fallback.cc). No
  // lock held: the fallback is the user's code.
  void RunFallback();

  grpc::experimental::ClientRpcInfo* const info_;
  // The method's state the call started with, held to its end (every
  // attempt sees the same one).
  const std::shared_ptr<ClientMethodState> state_;
  const CallEnvironment& env_;
  BreakerStage breaker_;
  // The method name, from the generated stub's static storage: it outlives
  // every attempt (grpc_internals.h).
  const char* const method_;
  // Null: the method retries (RetryDecider); else it hedges.
  const HedgingDecider* const hedging_;

  // Set once at the start, read-only afterwards.
  grpc::experimental::InterceptorBatchMethods* methods_ = nullptr;
  bool caller_blocks_ = false;
  std::multimap<std::string, std::string> metadata_;
  grpc::ByteBuffer request_;
  absl::Time call_deadline_ = absl::InfiniteFuture();
  CallDeadlines deadlines_;  // what its statuses say about deadlines
  // The channel past our interceptors (only the application's inner ones).
  std::unique_ptr<grpc::ChannelInterface> channel_;
  // Where attempts and timers complete: the caller's thread's queue for a
  // blocking caller, else the AttemptCompletionQueue's.
  grpc::CompletionQueue* cq_ = nullptr;
  // An async caller's own queue, where its attempts complete instead; null
  // for any other caller.
  grpc::CompletionQueue* caller_queue_ = nullptr;
  // A callback caller: attempts are made with the callback API.
  bool callback_attempts_ = false;

  Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  // Inlined up to the usual maxAttempts (3), without an allocation.
  absl::InlinedVector<std::unique_ptr<Attempt>, 3> attempts_ ABSL_GUARDED_BY(mu_);
  // Re-picks: attempts gRPC's load balancer sent to an endpoint that fails
  // alone (AttemptOutcome::endpoint_known_bad, no route of ours) and that
  // failed there. The library's own picker would not have sent them (it
  // skips an open endpoint and the ones the call tried), so they do not use
  // up the call's maxAttempts (AttemptOutcome::repicks), at most
  // kMaxRepicks a call; the deadline still bounds them.
  static constexpr int kMaxRepicks = 2;
  int repicks_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Timer>> timers_ ABSL_GUARDED_BY(mu_);
  Timer* live_timer_ ABSL_GUARDED_BY(mu_) = nullptr;  // the one that counts
  bool timer_is_backoff_ ABSL_GUARDED_BY(mu_) = false;
  HedgingDecider::Call hedge_ ABSL_GUARDED_BY(mu_);
  // The attempt whose metadata, trailers and response the caller gets: the
  // deciding one, or the last that ended.
  Attempt* shown_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Bulkhead: the wait is a timer (wait_timer_, one count) whose event
  // decides: EndWait() says whether a slot was granted. A grant only cancels
  // the timer. The timer is Set() outside the lock, so the grant, the
  // caller's cancellation and Start() cancel it only once it is set
  // (wait_set_); whichever comes second does.
  SlotWait slot_wait_{this};
  Timer* wait_timer_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool wait_set_ ABSL_GUARDED_BY(mu_) = false;
  bool wait_over_ ABSL_GUARDED_BY(mu_) = false;  // its timer's event came
  bool granted_ ABSL_GUARDED_BY(mu_) = false;
  bool holds_slot_ ABSL_GUARDED_BY(mu_) = false;
  // Shadow bulkhead: the call holds a place in its queue (EndShadow() at
  // the call's end).
  bool shadow_queued_ ABSL_GUARDED_BY(mu_) = false;
  bool wait_by_deadline_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time wait_from_ ABSL_GUARDED_BY(mu_);  // bulkhead clock
  bool bulkhead_rejected_ ABSL_GUARDED_BY(mu_) = false;
  // A slot may still be granted (the call waits, or OnSlotGranted() runs):
  // the call does not complete until it is false (Release(), and a blocking
  // caller waits on grant_done_).
  bool grant_pending_ ABSL_GUARDED_BY(mu_) = false;
  CondVar grant_done_;
  grpc::Status final_status_;  // written once before the last Release(), read after
  // Retries refused by a spent retry budget or throttle (FinalStatus()):
  // a fallback's cause.
  bool budget_spent_ ABSL_GUARDED_BY(mu_) = false;
  // The fallback, run in the re-entry (fallback_ran_), and the status the
  // call had before it answered (counted as the call's end).
  FallbackStage fallback_;
  bool fallback_ran_ = false;
  grpc::StatusCode original_code_ = grpc::StatusCode::OK;
  // The call's counters: under mu_, and in Start() and the re-entry after
  // Hijack() (which the last Release() orders after every other use).
  CallCounters counters_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRIED_UNARY_CALL_H_
