// File: src/client_interceptors/call_plan.h
//
// Which stages of the chain a call gets: decided once per call, by
// PlanCall(), which the ResilientCallFactory asks when gRPC creates the
// call's interceptors.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_PLAN_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_PLAN_H_

#include <memory>

#include "grpcpp/support/client_interceptor.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/client_interceptors/client_resilience_impl.h"

namespace resilience {

// CallPlan
//
// | the call                                   | call object       | retry | timeout | breaker | metrics |
// |--------------------------------------------|-------------------|-------|---------|---------|---------|
// | unary, from a generated stub, of a method  | RetriedUnaryCall  |  yes  | per attempt (real deadline) | per attempt | yes |
// | whose policy allows > 1 attempt            |                   |       |         |         |         |
// | an attempt a RetriedUnaryCall makes        | none              |   -   |    -    |    -    |    -    |
// | any other call of a method with a policy   | SingleAttemptCall |   -   |   (1)   |   (2)   |   (3)   |
// | a call of a method without a policy        | SingleAttemptCall |   -   |    -    |    -    |   (3)   |
//
// (1) when the policy has a `timeout`, or the call is unary and the policy a
//     perAttemptTimeout (then the call's one attempt gets it);
// (2) when the policy has a breaker; a unary call of a method with a
//     `bulkhead` waits for its slot first (a RetriedUnaryCall too, once for
//     all its attempts); streams take no slot;
// (3) every call the chain takes is counted (`calls`, `attempts`); by status
//     and latency with metrics on; the channel's retryThrottling hears it.
// A call with nothing to do (no retry, timeout or breaker, metrics off and no
// retryThrottling) gets no call object and is not counted.
struct CallPlan {
  // The method's state as the call starts: the call holds it to its end,
  // whatever policy update comes meanwhile. null: the call gets none of ours.
  std::shared_ptr<ClientMethodState> state;
  bool retry = false;
  bool timeout = false;
  bool breaker = false;
  bool metrics = false;
  // A unary call of a retried method that does not come from a protobuf
  // generated stub: it is not retried (grpc_internals.h), but counted and
  // reported.
  bool unretried_stub = false;
  // A unary call of a method with a bulkhead (streams are not limited).
  bool bulkhead = false;

  // Whether the call gets a SingleAttemptCall (when not `retry`).
  bool single_attempt() const {
    return timeout || breaker || metrics || unretried_stub || bulkhead;
  }
};

// FromGeneratedStub()
//
// Whether a call of `method` (the name the call carries, ClientRpcInfo::
// method()) came from a protobuf generated stub (grpc_internals.h), the only
// stubs whose receive buffer is known to be a protobuf::MessageLite.
bool FromGeneratedStub(const char* method, ClientMethodState& state);

// PlanCall()
//
// The plan for the call `info` describes. One MethodCache lookup; no side
// effects but the method's first resolution. Called once per call.
CallPlan PlanCall(ClientResilienceImpl& resilience, grpc::experimental::ClientRpcInfo* info);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_PLAN_H_
