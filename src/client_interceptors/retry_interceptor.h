// File: src/client_interceptors/retry_interceptor.h
//
// The outermost client interceptor: retries of unary calls, each attempt
// with its own deadline, re-issued through the rest of the chain.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_INTERCEPTOR_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "grpcpp/alarm.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_interceptor.h"
#include "grpcpp/support/async_unary_call.h"
#include "grpc_resilience/internal/breaker/mutex.h"
#include "grpc_resilience/internal/client_interceptors/attempt_completion_queue.h"
#include "grpc_resilience/internal/client_interceptors/call_handoff.h"
#include "grpc_resilience/internal/client_interceptors/client_resilience.h"
#include "grpc_resilience/internal/client_interceptors/local_status.h"

namespace resilience {

// The metadata an attempt carries: gRPC's own name (gRFC A6), which 1.51's
// C++ server does not show to handlers, and go-grpc-middleware's, which it
// does.
inline constexpr char kPreviousAttemptsKey[] = "grpc-previous-rpc-attempts";
inline constexpr char kRetryAttemptKey[] = "x-retry-attempt";
inline constexpr char kPushbackKey[] = "grpc-retry-pushback-ms";

// RetryInterceptor
//
// For a unary call of a method whose policy has a retryPolicy, a timeout or a
// deadline. At the call's PRE_SEND_INITIAL_METADATA it takes the caller's
// metadata, serialized request and deadline, and does not Proceed(): it
// hijacks the call and makes the attempts itself, each a new ClientContext
// (caller metadata, credentials and compression copied; deadline =
// min(overall deadline, now + per-attempt timeout)) sent with a GenericStub
// on GetInterceptedChannel(), so every attempt passes through the timeout and
// breaker interceptors. The overall deadline is the caller's, or the
// policy's `deadline` when the caller set none.
//
// An attempt is retried when its code is in retryableStatusCodes and none of
// these holds: the breaker rejected it locally; the caller cancelled; the
// caller's deadline passed; maxAttempts is reached; the channel's retry
// budget for the method is spent; the server's grpc-retry-pushback-ms is
// negative or malformed; the backoff (or the pushback, when the server gave
// one) would end at or after the overall deadline. Attempt N+1 carries
// `grpc-previous-rpc-attempts: N` and `x-retry-attempt: N`.
//
// Nothing blocks: attempts complete on the AttemptCompletionQueue's thread
// (the async API) and backoffs are a grpc::Alarm.
// Caller cancellation (PRE_SEND_CANCEL) cancels the attempt in flight and the
// backoff at once. The final attempt's status, initial metadata, trailers
// and response become the call's.
//
// Locking: `mu_` guards the attempt state against PRE_SEND_CANCEL, which
// arrives on the canceller's thread. Hijack() is the last thing a path does
// with `this`: the call may complete and destroy the interceptor as soon as
// it runs. Streaming calls are not retried (their messages would have to be
// buffered and replayed); use gRPC's built-in retry for those.
class RetryInterceptor final : public grpc::experimental::Interceptor,
                               private AttemptCompletionQueue::Tag {
 public:
  RetryInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state);

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  void Start(grpc::experimental::InterceptorBatchMethods* methods);
  void StartAttempt() ABSL_LOCKS_EXCLUDED(mu_);
  // The attempt's Finish() completed (on the AttemptCompletionQueue).
  void Done(bool ok) override;
  void OnAttemptDone(grpc::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  // Decides, under mu_, whether and after how long to retry; when not,
  // sets the call's final status (Finish()).
  std::optional<absl::Duration> NextRetry(grpc::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FillHijackedReceive(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  // The attempts' method; their ClientRpcInfo points into it.
  const std::string method_;

  // Set once at the start, read-only afterwards.
  grpc::experimental::InterceptorBatchMethods* methods_ = nullptr;
  std::multimap<std::string, std::string> metadata_;
  grpc::ByteBuffer request_;
  absl::Time overall_deadline_ = absl::InfiniteFuture();
  DeadlineSource deadline_source_ = DeadlineSource::kCaller;
  std::shared_ptr<grpc::GenericStub> stub_;

  Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<grpc::ClientContext> attempt_context_ ABSL_GUARDED_BY(mu_);
  // Lives in the attempt's call arena: declared after the context, so it is
  // destroyed first.
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> attempt_reader_
      ABSL_GUARDED_BY(mu_);
  grpc::Status attempt_status_;  // written by the attempt, read after it ended
  absl::Time attempt_deadline_ ABSL_GUARDED_BY(mu_);
  // Handed to the attempt's breaker while the attempt is created.
  internal::AttemptInfo attempt_info_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer response_;  // written by the attempt, read after it ended
  std::unique_ptr<grpc::Alarm> backoff_alarm_ ABSL_GUARDED_BY(mu_);
  grpc::Status final_status_;  // written once before Hijack(), read after
  // The call's status code and latency (this interceptor meters the calls
  // it takes; their attempts are not metered). Start() and the re-entry
  // after Hijack() only.
  CallMeter meter_;
};

class RetryInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit RetryInterceptorFactory(std::shared_ptr<ClientResilience> state)
      : state_(std::move(state)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override;

 private:
  const std::shared_ptr<ClientResilience> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RETRY_INTERCEPTOR_H_
