// File: src/client_interceptors/timeout_interceptor.h
//
// The policy's `timeout` (the call's deadline) for calls the retry
// interceptor does not take (streams, and unary calls of methods that are
// not retried, where it also applies the one attempt's per-attempt timeout).
// Retried unary calls get theirs from the retry interceptor, as each
// attempt's real deadline.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_INTERCEPTOR_H_

#include <memory>

#include "absl/time/time.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/client_interceptors/call_handoff.h"
#include "src/client_interceptors/client_resilience_impl.h"
#include "src/core/timeout_scheduler.h"

namespace resilience {

// TimeoutInterceptor
//
// gRPC 1.51 gives an interceptor no way to change a call's deadline. So when
// the call starts, the interceptor (a TimeoutScheduler::Timer) is scheduled
// for the method's `timeout` (the call's deadline, as in gRPC) or, for a
// unary call that is not retried, its per-attempt timeout when sooner —
// unless the caller's own deadline comes first, which gRPC enforces. If the
// timer fires before the call has its status, it marks the call's
// TimeoutFlag and cancels the call (ClientContext::TryCancel()), and at
// POST_RECV_STATUS the CANCELLED status becomes DEADLINE_EXCEEDED in the
// chain's style (local_status.h); so does gRPC's bare "Deadline Exceeded"
// for the caller's deadline. The breaker, which sees the status first, reads
// the flag. The server sees a cancellation rather than a deadline.
//
// The outermost of our interceptors on its calls, so it also counts their
// one attempt, final status and latency (CallMeter).
//
// Lifetime: the timer is cancelled at POST_RECV_STATUS and in the
// destructor; TimeoutScheduler::Cancel() waits for a Fire() in progress, so
// Fire() never outlives the call's context. The flag lives here; the
// breaker of the same call holds a pointer to it (a call's interceptors are
// destroyed together, with its ClientContext).
class TimeoutInterceptor final : public grpc::experimental::Interceptor,
                                 private TimeoutScheduler::Timer {
 public:
  TimeoutInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state)
      : info_(info), state_(state) {}
  ~TimeoutInterceptor() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

  internal::TimeoutFlag* flag() { return &flag_; }

 private:
  void Fire() override;
  void Disarm();
  // The caller's own deadline has passed (gRPC ended the call for it).
  bool CallerDeadlinePassed() const;

  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  internal::TimeoutFlag flag_;
  absl::Duration limit_;
  bool started_ = false;
  bool armed_ = false;  // only touched by the call's own hooks
  // This interceptor is the outermost of ours on its call: it counts the
  // call's attempt, status and latency.
  CallMeter meter_;
};

// MakeTimeoutInterceptor()
//
// The timeout factory's choice for a call: a TimeoutInterceptor when its
// CallPlan says so, whose flag it hands over to the call's breaker
// (call_handoff.h); else nothing.
grpc::experimental::Interceptor* MakeTimeoutInterceptor(ClientResilienceImpl& resilience,
                                                        grpc::experimental::ClientRpcInfo* info);

using TimeoutInterceptorFactory = ClientChainFactory<MakeTimeoutInterceptor>;

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_INTERCEPTOR_H_
