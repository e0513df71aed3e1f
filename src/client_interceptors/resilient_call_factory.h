// File: src/client_interceptors/resilient_call_factory.h
//
// The client chain's one interceptor factory: for each call it makes the
// call's execution object, which runs the stages retry/hedging ->
// per-attempt timeout -> breaker -> metrics.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CALL_FACTORY_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CALL_FACTORY_H_

#include <memory>

#include "grpcpp/support/client_interceptor.h"
#include "src/client_interceptors/call_environment.h"
#include "src/client_interceptors/client_resilience_impl.h"

namespace resilience {

// ResilientCallFactory
//
// CreateClientInterceptor() plans the call once (PlanCall(), call_plan.h)
// and returns its call object:
//   - RetriedUnaryCall for a unary call from a generated stub of a method
//     whose policy allows more than one attempt: it hijacks the call and
//     issues the attempts on the intercepted channel, so only the
//     application's inner interceptors see them;
//   - SingleAttemptCall for any other call the chain takes: timeout,
//     breaker and counters around the call as the application made it;
//   - nothing for a call the plan gives nothing, and for our own attempts
//     (recognised by internal::kAttemptSuffix, grpc_internals.h).
// One object per call, so no state crosses from one interceptor to another.
// Thread-safe: it holds the channel's shared state (itself thread-safe) and
// gRPC may create several calls' interceptors at once.
class ResilientCallFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  // `clock`, `timeouts` and `timers`: the calls' time source, the timer
  // thread of single-attempt calls' timeouts and the retried calls' timers
  // (Clock::Real(), TimeoutScheduler::Global() and CallTimers::Real() by
  // default; tests inject simulated ones, which must outlive the channel).
  explicit ResilientCallFactory(std::shared_ptr<ClientResilienceImpl> resilience,
                                Clock& clock = Clock::Real(),
                                TimeoutScheduler* timeouts = nullptr,
                                CallTimers* timers = nullptr);

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override;

 private:
  const std::shared_ptr<ClientResilienceImpl> resilience_;
  CallEnvironment env_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RESILIENT_CALL_FACTORY_H_
