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
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/call_verdicts.h"
#include "src/server_interceptors/server_chain_factory.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

// FaultInjectionInterceptor
//
// At POST_RECV_INITIAL_METADATA, for a call the throttle did not reject:
//   - with probability abortFraction the call is aborted: added to
//     CallVerdicts (a GuardedService then skips the handler), and its
//     status replaced at PRE_SEND_STATUS by abortCode with
//     "<method>: fault injected";
//   - otherwise, with probability delayFraction, the call is held for
//     `delay`:
//       * sync API behind a GuardedService: the guard holds it on the
//         thread gRPC gives its handler (what a slow handler costs) and skips
//         the handler if the call ends first (deadline, client cancellation,
//         server shutdown), so a shutdown's grace period holds and a caller
//         that went away frees its throttle slot within milliseconds;
//       * callback API: the interceptor returns without Proceed() and a
//         grpc::Alarm calls Proceed() when the delay is over; no thread is
//         held (the handler only creates a reactor);
//       * sync API without a guard: as above, but Proceed() runs on a
//         ProceedExecutor thread, where the handler then runs (a bounded
//         pool: prefer the guard).
//     In the last two cases the alarm wakes every 20 ms: a call whose
//     deadline passed is rejected like an abort and answered
//     DEADLINE_EXCEEDED, and once CallVerdicts::EndHoldsAt() has passed (a
//     server shutdown) the call is answered UNAVAILABLE; a cancellation by
//     the client is not seen before the delay is over: on the callback
//     API, gRPC 1.51 offers no way to see it before the user's handler
//     runs (docs/server-rejection.md, fact 9), so a caller that cancels
//     keeps its throttle slot until the delay or its deadline ends.
// Without a throttle on the method, it counts the call (ServerCallMeter):
// admitted unless aborted, in flight until its status, the status sent, and
// the handler latency (injected delay included) unless it was answered
// without its handler. Behind a throttle, which counts the call, it keeps
// the handler latency only: it alone knows which calls it answers without
// their handler.
// Placed after the throttle, so a delayed call holds the slot it was granted
// (it behaves like a slow handler) and a rejected call is never delayed.
// Draws come from the method's seeded RandomSource, so a run is reproducible
// for a given arrival order. One instance per call.
class FaultInjectionInterceptor final : public grpc::experimental::Interceptor {
 public:
  FaultInjectionInterceptor(grpc::experimental::ServerRpcInfo* info, std::shared_ptr<ServerMethodState> state,
                            ProceedExecutor& executor, CallVerdicts& call_verdicts)
      : info_(info), state_(std::move(state)), executor_(executor), call_verdicts_(call_verdicts) {}
  ~FaultInjectionInterceptor() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // Returns true when the batch was held for a delay (Proceed() comes later).
  bool Decide(grpc::experimental::InterceptorBatchMethods* methods);
  // Rejects the call with `status` (see CallVerdicts).
  void Reject(grpc::Status status);
  // Sets the alarm for the next check of a hold.
  void Arm(grpc::experimental::InterceptorBatchMethods* methods);
  // A check of a hold: re-arms, or ends the hold (Proceed()).
  void OnAlarm(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ServerRpcInfo* const info_;
  // The method's state the call started with, held to its end.
  const std::shared_ptr<ServerMethodState> state_;
  ProceedExecutor& executor_;
  CallVerdicts& call_verdicts_;
  bool decided_ = false;
  bool replace_status_ = false;
  bool held_by_guard_ = false;  // a Hold() in CallVerdicts to forget
  bool callback_api_ = false;
  absl::Time hold_until_;
  grpc::Status status_;
  grpc::Alarm alarm_;
  // Without a throttle on the method, this is the last of our interceptors
  // in send order and counts the call (admitted unless aborted, in flight,
  // status, handler latency); behind a throttle, which counts the call, it
  // only times the handler of the calls it let through.
  ServerCallMeter meter_{state_->limits == nullptr};
};

// MakeFaultInjectionInterceptor()
//
// The choice of the first factory of ours: a FaultInjectionInterceptor for
// a method with fault injection, else nothing.
grpc::experimental::Interceptor* MakeFaultInjectionInterceptor(
    ServerResilienceImpl& resilience, grpc::experimental::ServerRpcInfo* info);

using FaultInjectionInterceptorFactory = ServerChainFactory<MakeFaultInjectionInterceptor>;

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_FAULT_INJECTION_INTERCEPTOR_H_
