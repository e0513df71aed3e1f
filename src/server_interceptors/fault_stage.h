// File: src/server_interceptors/fault_stage.h
//
// The fault injection stage of a server call (ServerCall), from the
// method's `faultInjection` policy: added latency for a fraction of calls,
// and aborts with a chosen status for a fraction of calls. For tests, demos
// and experiments.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_FAULT_STAGE_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_FAULT_STAGE_H_

#include <memory>
#include <optional>
#include <string>

#include "grpcpp/alarm.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/call_verdicts.h"
#include "src/server_interceptors/proceed_executor.h"
#include "src/server_interceptors/server_method_state.h"

namespace resilience {

// FaultStage
//
// One per call, enabled for a method with fault injection; ServerCall runs
// it after the throttle, for a call the throttle did not reject, when the
// call's initial metadata arrives (POST_RECV_INITIAL_METADATA):
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
//       * callback API: the call's hook returns without Proceed() and a
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
// Placed after the throttle, so a delayed call holds the slot it was granted
// (it behaves like a slow handler) and a rejected call is never delayed.
// Draws come from the method's seeded RandomSource, so a run is reproducible
// for a given arrival order. Not thread-safe: gRPC serializes a call's
// hooks, and a hold's alarm runs while the call's hooks wait for it.
class FaultStage {
 public:
  // `state`: the method's state the call started with (null: no method
  // state); it must outlive the stage (the ServerCall holds it).
  FaultStage(grpc::experimental::ServerRpcInfo* info, ServerMethodState* state,
             ProceedExecutor& executor, CallVerdicts& call_verdicts)
      : info_(info), state_(state), executor_(executor), call_verdicts_(call_verdicts) {}
  FaultStage(const FaultStage&) = delete;
  FaultStage& operator=(const FaultStage&) = delete;
  ~FaultStage();

  bool enabled() const { return state_ != nullptr && state_->fault != nullptr; }

  // Aborts()
  //
  // Draws the abort: true when the call is aborted (rejected; its status
  // replaced at SendStatus()).
  bool Aborts();

  // Holds()
  //
  // For a call going on to its handler: draws the delay; true when the
  // batch `methods` is held (then Proceed() comes from the hold's end).
  bool Holds(grpc::experimental::InterceptorBatchMethods* methods);

  // SendStatus()
  //
  // PRE_SEND_STATUS: the abort's (or the ended hold's) status, if the
  // stage answered the call without its handler (returned: the code
  // sent); else nullopt.
  std::optional<grpc::StatusCode> SendStatus(grpc::experimental::InterceptorBatchMethods* methods);

 private:
  // Rejects the call with `status` (see CallVerdicts).
  void Reject(grpc::Status status);
  // Sets the alarm for the next check of a hold.
  void Arm(grpc::experimental::InterceptorBatchMethods* methods);
  // A check of a hold: re-arms, or ends the hold (Proceed()).
  void OnAlarm(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ServerRpcInfo* const info_;
  ServerMethodState* const state_;
  ProceedExecutor& executor_;
  CallVerdicts& call_verdicts_;
  bool replace_status_ = false;
  bool held_by_guard_ = false;  // a Hold() in CallVerdicts to forget
  bool callback_api_ = false;
  absl::Time hold_until_;
  grpc::Status status_;
  // Made for a held call only (a grpc::Alarm allocates): it lives until
  // the call ends, which cannot be before Proceed().
  std::unique_ptr<grpc::Alarm> alarm_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_FAULT_STAGE_H_
