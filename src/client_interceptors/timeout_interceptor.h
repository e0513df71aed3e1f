// File: src/client_interceptors/timeout_interceptor.h
//
// Per-attempt timeouts and default deadlines for calls the retry interceptor
// does not take (streams, and unary calls of methods that are not retried).
// Retried unary calls get theirs from the retry interceptor, as each
// attempt's real deadline.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_INTERCEPTOR_H_

#include <memory>
#include <mutex>

#include "absl/time/time.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/mutex.h"
#include "src/client_interceptors/call_handoff.h"
#include "src/client_interceptors/client_resilience.h"

namespace resilience {

// TimeoutInterceptor
//
// gRPC 1.51 gives an interceptor no way to change a call's deadline. So when
// the call starts, a TimeoutScheduler entry is set for the method's `timeout` (or its
// default `deadline`, when the caller set none and it is sooner); if it fires
// before the call has its status, it cancels the call
// (ClientContext::TryCancel()) and marks the call's TimeoutFlag, and at
// POST_RECV_STATUS the CANCELLED status becomes DEADLINE_EXCEEDED
// "<method>: per-attempt timeout of <t> exceeded". The breaker, which sees
// the status first, reads the flag and records a failure (a per-attempt
// timeout) or nothing (the default deadline). The server sees a
// cancellation rather than a deadline.
//
// Locking: the scheduler's callback may run at any time, even after this
// interceptor is gone, so it touches only `Shared`, kept alive by a
// shared_ptr, whose `done` (set when the status arrives or the interceptor is
// destroyed) says the ClientContext may no longer be used.
class TimeoutInterceptor final : public grpc::experimental::Interceptor {
 public:
  TimeoutInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state,
                     std::shared_ptr<internal::TimeoutFlag> flag);
  ~TimeoutInterceptor() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  struct Shared {
    Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    grpc::ClientContext* context ABSL_GUARDED_BY(mu) = nullptr;
    std::shared_ptr<internal::TimeoutFlag> flag;
  };
  void MarkDone();

  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  const std::shared_ptr<Shared> shared_;
  absl::Duration limit_;
  bool started_ = false;
};

class TimeoutInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TimeoutInterceptorFactory(std::shared_ptr<ClientResilience> state)
      : state_(std::move(state)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override;

 private:
  const std::shared_ptr<ClientResilience> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_TIMEOUT_INTERCEPTOR_H_
