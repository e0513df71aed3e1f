// File: src/client_interceptors/breaker_interceptor.h
//
// The innermost client interceptor: asks the method's circuit breaker before
// anything reaches the network, and reports every call's outcome to it.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/breaker.h"
#include "src/client_interceptors/call_handoff.h"
#include "src/client_interceptors/client_resilience_impl.h"
#include "src/client_interceptors/local_rejection.h"

namespace resilience {

// BreakerInterceptor
//
// At the call's first PRE_SEND_INITIAL_METADATA it asks the breaker. When
// rejected, it hijacks the call (no network traffic at all) and answers
// UNAVAILABLE "<method>: rejected locally by the circuit breaker (<kind>:
// <reason>)" (BreakerRejectionStatus()) with the trailer
// `x-resilience-local-rejection: breaker`. UNAVAILABLE, because to a caller
// (and to standard clients' retry) the method is unavailable for now; the
// message and the trailer say it was decided here. This works for every
// call type and stub flavour: messages the application sends fail (Write()
// returns false), reads fail, and the status is the rejection. Guards
// against gRPC 1.51 repeating PRE_SEND_INITIAL_METADATA on every batch of a
// hijacked async stream by deciding only once.
//
// Admitted calls are recorded at POST_RECV_STATUS as
// BreakerSettings::Classify() reads them: how the call ended (a caller's
// cancellation, a deadline already past at the start, the per-attempt
// timeout or the call's deadline, seen from the status, the context's
// deadline and the TimeoutFlag), else its status code. A DEADLINE_EXCEEDED
// a server answered before our deadline is a server answer like any other.
// The latency recorded (for slowCallThreshold) is the time to the first
// response message, or to the status when none came: a stream's lifetime is
// not the backend's speed. One instance per call.
//
// Calls the retry interceptor takes never get one (call_plan.h): it asks and
// tells the breaker for each of their attempts itself.
class BreakerInterceptor final : public grpc::experimental::Interceptor {
 public:
  // `meters_call`: this is the outermost of our interceptors on an
  // application call (no retry, no timeout interceptor), so it counts the
  // call's attempt, status and latency (CallMeter).
  BreakerInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state,
                     Clock& clock, const internal::TimeoutFlag* timeout_flag, bool meters_call)
      : info_(info),
        state_(state),
        clock_(clock),
        timeout_flag_(timeout_flag),
        meters_call_(meters_call) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // How the call ended when no server answer decided it (the breaker
  // classifies that, BreakerSettings::Classify()).
  LocalEnd EndOf(const grpc::Status& status) const;

  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  Clock& clock_;
  // The call's TimeoutInterceptor's, or null.
  const internal::TimeoutFlag* const timeout_flag_;
  const bool meters_call_;
  CallMeter meter_;  // used when meters_call_
  // When the first response message arrived (breaker clock).
  std::optional<absl::Time> first_response_;
  bool started_ = false;
  bool rejected_ = false;
  Admission admission_;
  // Wall-clock start, to compare with the context's deadline (the breaker's
  // own clock may be simulated).
  absl::Time real_start_;
};

// MakeBreakerInterceptor()
//
// The choice of the last factory of ours in the chain: it takes the timeout
// factory's flag (call_handoff.h) and gives the call what its CallPlan
// says: a BreakerInterceptor, or a MetricsInterceptor, or nothing.
grpc::experimental::Interceptor* MakeBreakerInterceptor(ClientResilienceImpl& resilience,
                                                        grpc::experimental::ClientRpcInfo* info);

using BreakerInterceptorFactory = ClientChainFactory<MakeBreakerInterceptor>;

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_
