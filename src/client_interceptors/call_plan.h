// File: src/client_interceptors/call_plan.h
//
// Which of our client interceptors a call gets: decided in one place,
// PlanCall(), which every factory of the chain asks.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_PLAN_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_PLAN_H_

#include "grpcpp/support/client_interceptor.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/client_interceptors/client_resilience_impl.h"

namespace resilience {

// CallPlan
//
// | the call                                   | retry | timeout | breaker | metrics |
// |--------------------------------------------|-------|---------|---------|---------|
// | unary, from a generated stub, of a method  |  yes  |    -    |    -    |    -    |
// | whose policy allows > 1 attempt            |       |         |         |         |
// | an attempt the retry interceptor makes     |   -   |    -    |    -    |    -    |
// | any other call of a method with a policy   |   -   |   (1)   |   (2)   |   (3)   |
// | a call of a method without a policy        |   -   |    -    |    -    |   (4)   |
//
// (1) when the policy has a `timeout`, or the call is unary and the policy a
//     perAttemptTimeout (then the call's one attempt gets it);
// (2) when the policy has a breaker;
// (3) with metrics on, or a retryThrottling in the policy file (every call
//     feeds it, retry_throttle_feed.h), when neither (1) nor (2);
// (4) likewise.
// The retry interceptor does what the others would for its attempts: each
// attempt's deadline is its timeout, and it asks and tells the breaker
// itself, so an attempt carries none of our interceptors (only the
// application's inner ones). The outermost of ours meters the call
// (CallMeter): retry, else timeout, else breaker, else metrics.
struct CallPlan {
  ClientMethodState* state = nullptr;  // null: the call gets none of ours
  bool retry = false;
  bool timeout = false;
  bool breaker = false;
  bool metrics = false;
  // A unary call of a retried method that does not come from a protobuf
  // generated stub: it is not retried (stub_kind.h).
  bool unretried_stub = false;
};

// PlanCall()
//
// The plan for the call `info` describes, created on this thread. Cheap
// (one MethodCache lookup) and without side effects but the method's first
// resolution, so each factory of a call's chain may ask.
CallPlan PlanCall(ClientResilienceImpl& resilience, grpc::experimental::ClientRpcInfo* info);

namespace internal {

// True while the retry interceptor creates one of its attempts on this
// thread: gRPC 1.51 creates a call's interceptors synchronously, on the
// calling thread, so the flag reaches exactly that attempt's factories.
bool CreatingAttempt();
void SetCreatingAttempt(bool creating);

}  // namespace internal

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_CALL_PLAN_H_
