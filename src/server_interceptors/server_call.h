// File: src/server_interceptors/server_call.h
//
// One server call as grpc-resilience sees it: the one interceptor of ours a
// call gets, running the method's stages in a fixed order.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_H_

#include <memory>

#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/drain_stage.h"
#include "src/server_interceptors/fault_stage.h"
#include "src/server_interceptors/server_call_meter.h"
#include "src/server_interceptors/server_method_state.h"
#include "src/server_interceptors/server_resilience_impl.h"
#include "src/server_interceptors/throttle_stage.h"

namespace resilience {

// ServerCall
//
// Made by ServerCallFactory where the call arrives; it looks the method's
// state up once (the generation in force then, held to the call's end) and
// runs, when the call's initial metadata arrives (POST_RECV_INITIAL_METADATA):
//   1. DrainStage: a call that arrived while the server drains is refused,
//      and no other stage sees it;
//   2. ThrottleStage (a method with a throttle): deadline, CPU, per caller,
//      criticality shares, retry shedding, concurrency, rate, fleet-wide
//      rate, each in its enforcement mode (shadow decisions logged); a
//      rejected call goes to no later stage;
//   3. FaultStage (a method with fault injection): abort, or delay (a held
//      call's Proceed() comes from the hold's end);
//   4. ServerCallMeter: the call's counters (admitted, in flight).
// At PRE_SEND_STATUS the stage that answered the call without its handler
// writes its status (drain, throttle or fault injection: only one can),
// then the throttle learns how an admitted call ended (and adds the load
// report), then the meter counts the status sent and the handler latency.
//
// A guarded callback-API call of a server whose only interceptors are ours
// (ServerCallFactory's `decide_on_arrival`) is decided by the throttle in
// the constructor: a rejected call (rejected_on_arrival()) then gets no
// interceptor at all, and its guard answers it (CallVerdicts::
// RejectOnArrival()).
//
// gRPC 1.51 destroys a server interceptor only after the handler returned
// and the call closed; the stages give back what they hold then (the
// drain stage last: the call stops counting as open once the rest is done).
// Never calls ServerContext::IsCancelled() (it recurses in 1.51's sync
// server when called from an interceptor). Not thread-safe: gRPC serializes
// a call's hooks.
class ServerCall final : public grpc::experimental::Interceptor {
 public:
  ServerCall(ServerResilienceImpl& resilience, grpc::experimental::ServerRpcInfo* info,
             bool decide_on_arrival);
  ~ServerCall() override;

  // Whether the throttle rejected the call in the constructor: destroy the
  // object unused (the call's guard answers it).
  bool rejected_on_arrival() const { return rejected_on_arrival_; }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // The method's state, looked up once per call; none when no policy
  // limits or injects anything and nothing is counted.
  static std::shared_ptr<ServerMethodState> Lookup(ServerResilienceImpl& resilience,
                                                   const grpc::experimental::ServerRpcInfo* info);
  // Whether the throttle may decide the call now (see above).
  bool DecidesOnArrival(bool decide_on_arrival) const;
  // The stages at POST_RECV_INITIAL_METADATA, in order; true when the
  // batch is held (its Proceed() comes later).
  bool Arrive(grpc::experimental::InterceptorBatchMethods* methods);
  // The stages at PRE_SEND_STATUS.
  void SendStatus(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ServerRpcInfo* const info_;
  CallVerdicts& verdicts_;
  // First stage, and destroyed last.
  DrainStage drain_;
  // The method's state (null: no throttle nor fault injection anywhere,
  // and metrics off); the stages point into it.
  const std::shared_ptr<ServerMethodState> state_;
  ThrottleStage throttle_;
  FaultStage fault_;
  ServerCallMeter meter_;
  bool arrived_ = false;
  bool rejected_on_arrival_ = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_H_
