// File: src/client_interceptors/retry_interceptor.h
//
// The outermost client interceptor: retries of unary calls, each attempt
// with its own deadline and its own breaker admission.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_INTERCEPTOR_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/impl/codegen/channel_interface.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_interceptor.h"
#include "grpc_resilience/internal/breaker/breaker.h"
#include "grpc_resilience/internal/core/clock.h"
#include "grpc_resilience/internal/core/mutex.h"
#include "grpc_resilience/internal/client_interceptors/attempt_completion_queue.h"
#include "grpc_resilience/internal/client_interceptors/client_resilience.h"
#include "grpc_resilience/internal/client_interceptors/local_status.h"
#include "grpc_resilience/internal/grpc_common/metadata_keys.h"

namespace resilience {

// RetryInterceptor
//
// Takes the unary calls of a method whose policy allows more than one
// attempt (retryPolicy.maxAttempts > 1), from protobuf generated stubs
// (stub_kind.h). At the call's PRE_SEND_INITIAL_METADATA it takes the
// caller's metadata, serialized request and deadline, and does not
// Proceed(): it hijacks the call and makes the attempts itself. gRPC 1.51
// leaves no cheaper way: a call that went out as the caller's own cannot be
// given a later attempt's response (docs/retry-cost.md).
//
// Each attempt:
//   1. asks the method's breaker (if any). A rejection builds no call at
//      all: the attempt ends at once as UNAVAILABLE "rejected locally", and
//      a local rejection is never retried;
//   2. is a new ClientContext (caller metadata, credentials and
//      compression copied; deadline = min(call deadline, now +
//      perAttemptTimeout); waitForReady from the policy) sent on the
//      channel past our interceptors, so that only the application's inner
//      interceptors see it: its deadline is its timeout, and this
//      interceptor reports its outcome to the breaker;
//   3. ends in RetryDecider::Decide() (src/retry), which says whether and
//      after how long to retry. Attempt N+1 carries
//      `grpc-previous-rpc-attempts: N` and `x-retry-attempt: N`.
// The call's deadline is the caller's, or the policy's `timeout` when that
// comes first. The final attempt's status, initial metadata, trailers and
// response become the call's.
//
// Where the attempts run:
//   - a blocking (sync stub) caller waits on its own thread anyway, so its
//     attempts are blocking calls made right there, and backoffs wait there
//     too: no other thread is involved (stub_kind.h, CallerBlocks());
//   - any other caller (callback or async stub) must not be blocked: its
//     attempts complete on the AttemptCompletionQueue's thread and backoffs
//     are a grpc::Alarm.
// Caller cancellation (PRE_SEND_CANCEL, on the canceller's thread) cancels
// the attempt in flight and ends the backoff at once.
//
// Locking: `mu_` guards the attempt state against PRE_SEND_CANCEL. Hijack()
// is the last thing a path does with `this`: the call may complete and
// destroy the interceptor as soon as it runs. Streaming calls are not
// retried here (their messages would have to be buffered and replayed);
// gRPC's built-in retry takes those (builtin_retry_config.h).
class RetryInterceptor final : public grpc::experimental::Interceptor,
                               private AttemptCompletionQueue::Tag {
 public:
  RetryInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state,
                   Clock& breaker_clock);

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // What PrepareAttempt() leaves to do.
  enum class Step {
    kSend,      // send the attempt now prepared in attempt_context_
    kRejected,  // the breaker rejected the attempt: it ended without a call
    kFinished,  // the call's status is final (cancelled, deadline passed)
  };

  void Start(grpc::experimental::InterceptorBatchMethods* methods);
  void Cancel();
  // A blocking caller: every attempt and backoff on this thread.
  void RunOnCallerThread();
  // Any other caller: the next attempt on the AttemptCompletionQueue.
  void StartQueuedAttempt();
  void Done(bool ok) override;  // a queued attempt's Finish() completed
  void OnQueuedAttemptDone(grpc::Status status);
  // The call of the attempt PrepareAttempt() made, completing on `cq`;
  // kept in attempt_reader_.
  grpc::ClientAsyncResponseReader<grpc::ByteBuffer>* CreateAttemptCall(grpc::CompletionQueue* cq)
      ABSL_LOCKS_EXCLUDED(mu_);

  Step PrepareAttempt() ABSL_LOCKS_EXCLUDED(mu_);
  // Reports the attempt's end to the breaker and asks the decider: the wait
  // before the next attempt, or nullopt when final_status_ is set.
  std::optional<absl::Duration> AfterAttempt(grpc::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  grpc::Status FinalStatus(const RetryDecision& decision, grpc::Status last)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits `delay` on the caller's thread; false when cancelled meanwhile.
  bool WaitOnCallerThread(absl::Duration delay) ABSL_LOCKS_EXCLUDED(mu_);
  void FillHijackedReceive(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  Clock& breaker_clock_;
  // The method name, from the generated stub's static storage: it outlives
  // every attempt (stub_kind.h).
  const char* const method_;

  // Set once at the start, read-only afterwards.
  grpc::experimental::InterceptorBatchMethods* methods_ = nullptr;
  std::multimap<std::string, std::string> metadata_;
  grpc::ByteBuffer request_;
  absl::Time call_deadline_ = absl::InfiniteFuture();
  DeadlineSource deadline_source_ = DeadlineSource::kCaller;
  // The channel past our interceptors (only the application's inner ones).
  std::unique_ptr<grpc::ChannelInterface> channel_;

  Mutex mu_;
  CondVar wake_ ABSL_GUARDED_BY(mu_);  // a blocking caller's backoff
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<grpc::ClientContext> attempt_context_ ABSL_GUARDED_BY(mu_);
  // Lives in the attempt's call arena: declared after the context, so it is
  // destroyed first.
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> attempt_reader_
      ABSL_GUARDED_BY(mu_);
  grpc::Status attempt_status_;  // written by a queued attempt, read after it ended
  absl::Time attempt_deadline_ ABSL_GUARDED_BY(mu_);
  bool per_attempt_deadline_ ABSL_GUARDED_BY(mu_) = false;
  Admission admission_ ABSL_GUARDED_BY(mu_);  // the attempt's, from the breaker
  bool rejected_locally_ ABSL_GUARDED_BY(mu_) = false;  // the last attempt
  grpc::ByteBuffer response_;  // written by the attempt, read after it ended
  std::unique_ptr<grpc::Alarm> backoff_alarm_ ABSL_GUARDED_BY(mu_);
  grpc::Status final_status_;  // written once before Hijack(), read after
  // The call's status code and latency (this interceptor meters the calls
  // it takes; their attempts are not metered). Start() and the re-entry
  // after Hijack() only.
  CallMeter meter_;
};

// MakeRetryInterceptor()
//
// The first factory of ours in the chain: it counts every call its CallPlan
// gives a state (and reports, once per method, unary calls it cannot retry
// because they do not come from a generated stub), and gives a
// RetryInterceptor to the calls the plan says retry for.
grpc::experimental::Interceptor* MakeRetryInterceptor(ClientResilience& resilience,
                                                      grpc::experimental::ClientRpcInfo* info);

using RetryInterceptorFactory = ClientChainFactory<MakeRetryInterceptor>;

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_INTERCEPTOR_H_
