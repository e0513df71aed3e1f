// File: src/client_interceptors/breaker_interceptor.h
//
// The innermost client interceptor: asks the method's circuit breaker before
// anything reaches the network, and reports every attempt's outcome to it.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/client_interceptor.h"
#include "grpc_resilience/internal/breaker/breaker.h"
#include "grpc_resilience/internal/client_interceptors/call_handoff.h"
#include "grpc_resilience/internal/client_interceptors/client_resilience.h"
#include "grpc_resilience/internal/client_interceptors/local_rejection.h"

namespace resilience {

// BreakerInterceptor
//
// At the call's first PRE_SEND_INITIAL_METADATA it asks the breaker. When
// rejected, it hijacks the call (no network traffic at all) and answers
// UNAVAILABLE "<method>: rejected locally by the circuit breaker (<kind>
// <state>, <reason>, drop probability ..., failure rate ...)" with the trailer
// `x-resilience-local-rejection: breaker`. UNAVAILABLE, because to a caller
// (and to standard clients' retry) the method is unavailable for now; the
// message and the trailer say it was decided here. This works for every
// call type and stub flavour: messages the application sends fail (Write()
// returns false), reads fail, and the status is the rejection. Guards
// against gRPC 1.51 repeating PRE_SEND_INITIAL_METADATA on every batch of a
// hijacked async stream by deciding only once.
//
// Admitted attempts are recorded at POST_RECV_STATUS, classified by the
// policy's classifier (failureCodes/successCodes over the default table),
// except:
//   - CANCELLED by the caller: neutral (it says nothing about the backend);
//   - a sent call ended by a deadline: the attempt's per-attempt timeout
//     counts as DEADLINE_EXCEEDED (a failure by default); the call's own
//     deadline (the caller's, or the policy's `timeout`) does too unless the
//     policy says callerDeadline NEUTRAL. A hung backend is only ever seen
//     this way. A deadline already past at the start is neutral (nothing was
//     sent);
//   - DEADLINE_EXCEEDED answered by the server before the deadline: a server
//     answer like any other.
// The latency recorded (for slowCallThreshold) is the time to the first
// response message, or to the status when none came: a stream's lifetime is
// not the backend's speed. One instance per call (attempt).
//
// Attempts are counted where they are made: an attempt of a retried call by
// the retry interceptor; the one attempt of any other call by the outermost
// of our interceptors on it (CallMeter), which is this one when the call has
// no timeout interceptor.
class BreakerInterceptor final : public grpc::experimental::Interceptor {
 public:
  // `meters_call`: this is the outermost of our interceptors on an
  // application call (no retry, no timeout interceptor), so it counts the
  // call's attempt, status and latency (CallMeter).
  BreakerInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state,
                     Clock& clock, const internal::TimeoutFlag* timeout_flag,
                     bool per_attempt_deadline, bool meters_call)
      : info_(info),
        state_(state),
        clock_(clock),
        timeout_flag_(timeout_flag),
        per_attempt_deadline_(per_attempt_deadline),
        meters_call_(meters_call) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // A deadline within this of passing counts as passed (timers and the
  // status arrive a little apart).
  static constexpr absl::Duration kDeadlineSlack = absl::Milliseconds(5);

  Outcome Classify(const grpc::Status& status) const;
  // A sent call that its deadline ended: `per_attempt` when the deadline was
  // the attempt's per-attempt timeout rather than the call's.
  Outcome DeadlineOutcome(bool per_attempt) const;

  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  Clock& clock_;
  // The call's TimeoutInterceptor's, or null.
  const internal::TimeoutFlag* const timeout_flag_;
  // This attempt's context deadline is a per-attempt timeout set by the
  // retry interceptor.
  const bool per_attempt_deadline_;
  const bool meters_call_;
  CallMeter meter_;  // used when meters_call_
  // When the first response message arrived (breaker clock).
  std::optional<absl::Time> first_response_;
  bool started_ = false;
  bool rejected_ = false;
  std::string reject_message_;
  Admission admission_;
  // Wall-clock start, to compare with the context's deadline (the breaker's
  // own clock may be simulated).
  absl::Time real_start_;
};

// BreakerInterceptorFactory
//
// The last factory of ours in the chain: it takes what the others handed
// over (call_handoff.h) and decides what the call gets here: a
// BreakerInterceptor when the method has a breaker; else, for an
// application call that none of our interceptors counts (no retry, no
// timeout) while metrics are on, a MetricsInterceptor; else nothing. So a
// metrics-only interceptor is never added to a call that has one of ours,
// and no factory comes before the retry's (see retry_interceptor.cc).
class BreakerInterceptorFactory final
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BreakerInterceptorFactory(std::shared_ptr<ClientResilience> state)
      : state_(std::move(state)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override;

 private:
  const std::shared_ptr<ClientResilience> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_
