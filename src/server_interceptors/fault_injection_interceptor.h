// File: src/server_interceptors/fault_injection_interceptor.h
//
// Server-side fault injection per method, from the method's `faultInjection`
// policy: added latency for a fraction of calls, and aborts with a chosen
// status for a fraction of calls. For tests, demos and experiments.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_FAULT_INJECTION_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_FAULT_INJECTION_INTERCEPTOR_H_

#include <memory>
#include <string>

#include "grpcpp/alarm.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/rejected_calls.h"
#include "src/server_interceptors/server_resilience.h"

namespace resilience {

// FaultInjectionInterceptor
//
// At POST_RECV_INITIAL_METADATA, for a call the throttle did not reject:
//   - with probability abortFraction the call is aborted: added to
//     RejectedCalls (a GuardedService then skips the handler), and its
//     status replaced at PRE_SEND_STATUS by abortCode with
//     "<method>: fault injected";
//   - otherwise, with probability delayFraction, the call is held for
//     `delay`: the interceptor returns without Proceed(), a grpc::Alarm
//     times the delay and a ProceedExecutor thread calls Proceed(), so no
//     gRPC thread blocks, neither for the delay nor for the handler. A call whose deadline
//     passes during the delay is rejected the same way and answered
//     DEADLINE_EXCEEDED.
// Placed after the throttle, so a delayed call holds the slot it was granted
// (it behaves like a slow handler) and a rejected call is never delayed.
// Draws come from the method's seeded RandomSource, so a run is reproducible
// for a given arrival order. One instance per call.
class FaultInjectionInterceptor final : public grpc::experimental::Interceptor {
 public:
  FaultInjectionInterceptor(grpc::experimental::ServerRpcInfo* info, ServerMethodState* state,
                            ProceedExecutor& executor, RejectedCalls& rejected_calls)
      : info_(info), state_(state), executor_(executor), rejected_calls_(rejected_calls) {}
  ~FaultInjectionInterceptor() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // Returns true when the batch was held for a delay (Proceed() comes later).
  bool Decide(grpc::experimental::InterceptorBatchMethods* methods);
  // Rejects the call with `status` (see RejectedCalls).
  void Reject(grpc::Status status);
  // After the delay, on a ProceedExecutor thread.
  void Resume(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ServerRpcInfo* const info_;
  ServerMethodState* const state_;
  ProceedExecutor& executor_;
  RejectedCalls& rejected_calls_;
  bool decided_ = false;
  bool replace_status_ = false;
  grpc::Status status_;
  grpc::Alarm alarm_;
};

class FaultInjectionInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit FaultInjectionInterceptorFactory(std::shared_ptr<ServerResilience> state)
      : state_(std::move(state)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  const std::shared_ptr<ServerResilience> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_FAULT_INJECTION_INTERCEPTOR_H_
