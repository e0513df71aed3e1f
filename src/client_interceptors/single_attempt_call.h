// File: src/client_interceptors/single_attempt_call.h
//
// The call object of a call that is its own one attempt: streams, unary
// calls of methods that are not retried, and unary calls that do not come
// from a generated stub. The stages run in the contract order around the
// call, which goes out as the application made it (no hijack unless the
// breaker rejects it).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SINGLE_ATTEMPT_CALL_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SINGLE_ATTEMPT_CALL_H_

#include <atomic>
#include <memory>
#include <optional>

#include "absl/time/time.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/breaker.h"
#include "src/client_interceptors/attempt_timeout.h"
#include "src/client_interceptors/breaker_stage.h"
#include "src/client_interceptors/call_counters.h"
#include "src/client_interceptors/call_environment.h"
#include "src/client_interceptors/call_plan.h"

namespace resilience {

// SingleAttemptCall
//
// The one interceptor of ours on such a call (ResilientCallFactory makes
// it). At the first PRE_SEND_INITIAL_METADATA:
//   1. counters: the call and its one attempt (CallCounters);
//   2. timeout (AttemptTimeout), when the plan has one and the caller's
//      own deadline is not earlier: the policy's `timeout`, or for a unary
//      call its per-attempt timeout when sooner;
//   3. breaker (BreakerStage), when the plan has one: a rejection hijacks
//      the call (no network traffic) and answers UNAVAILABLE "<method>:
//      rejected locally by the circuit breaker (<kind>: <reason>)" with the
//      trailer `x-resilience-local-rejection: breaker`; on every call type
//      and stub flavour (writes fail, reads fail). Decided once: gRPC 1.51
//      repeats PRE_SEND_INITIAL_METADATA on every batch of a hijacked async
//      stream.
// At POST_RECV_STATUS, the end is classified once (ClassifyAttemptEnd()):
// the breaker records it, with the latency to the first response message
// (a stream's lifetime is not the backend's speed); a deadline of ours
// becomes DEADLINE_EXCEEDED in the chain's style (OwnDeadlineStatus()), and
// then the call's final status is counted, fed to the channel's
// retryThrottling and to the reconnect watch. Breaker events are delivered
// last, on this thread for a blocking caller, else on the events thread.
class SingleAttemptCall final : public grpc::experimental::Interceptor {
 public:
  SingleAttemptCall(grpc::experimental::ClientRpcInfo* info, std::shared_ptr<ClientMethodState> state,
                    const CallPlan& plan, const CallEnvironment& env);

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  void Start(grpc::experimental::InterceptorBatchMethods* methods);
  void FillRejection(grpc::experimental::InterceptorBatchMethods* methods);
  void End(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ClientRpcInfo* const info_;
  // The method's state the call started with, held to its end.
  const std::shared_ptr<ClientMethodState> hold_;
  ClientMethodState& state_;
  const CallEnvironment& env_;
  const bool has_timeout_;
  const bool unretried_stub_;
  CallCounters counters_;
  BreakerStage breaker_;
  AttemptTimeout timeout_;
  Admission admission_;
  absl::Duration limit_ = absl::InfiniteDuration();
  absl::Time sent_at_;  // wall clock, to compare with deadlines
  // When the first response message arrived (breaker clock).
  std::optional<absl::Time> first_response_;
  // PRE_SEND_CANCEL seen (on the canceller's thread).
  std::atomic<bool> cancelled_{false};
  bool started_ = false;
  bool rejected_ = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_SINGLE_ATTEMPT_CALL_H_
