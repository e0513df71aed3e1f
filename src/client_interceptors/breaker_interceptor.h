// File: src/client_interceptors/breaker_interceptor.h
//
// The innermost client interceptor: asks the method's circuit breaker before
// anything reaches the network, and reports every attempt's outcome to it.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_BREAKER_INTERCEPTOR_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/client_interceptor.h"
#include "src/breaker/breaker.h"
#include "src/client_interceptors/call_handoff.h"
#include "src/client_interceptors/client_resilience.h"

namespace resilience {

// The trailer a local breaker rejection carries, so that callers and the
// retry interceptor can tell it from a server's UNAVAILABLE.
inline constexpr char kLocalRejectionKey[] = "x-resilience-local-rejection";

// RejectedLocally()
//
// True when the call of `context`, which has ended, was rejected by a
// BreakerInterceptor without reaching the network (it carries the
// kLocalRejectionKey trailer).
bool RejectedLocally(const grpc::ClientContext& context);

// BreakerInterceptor
//
// At the call's first PRE_SEND_INITIAL_METADATA it asks the breaker. When
// rejected, it hijacks the call (no network traffic at all) and answers
// UNAVAILABLE "<method>: rejected locally by the circuit breaker (<kind>
// <state>, <reason>, drop probability ..., failure rate ...)" with the trailer
// `x-resilience-local-rejection: breaker`. This works for every call type and
// stub flavour: messages the application sends fail (Write() returns false),
// reads fail, and the status is the rejection. Guards against gRPC 1.51
// repeating PRE_SEND_INITIAL_METADATA on every batch of a hijacked async
// stream by deciding only once.
//
// Admitted attempts are recorded at POST_RECV_STATUS: OK and the backend's
// own answers (NOT_FOUND, ...) as success; UNAVAILABLE, INTERNAL, ... as
// failure; CANCELLED as neutral unless this call's timeout interceptor fired;
// DEADLINE_EXCEEDED as failure when the attempt's deadline was its
// per-attempt timeout, neutral when it was the caller's own deadline. The
// policy's failureCodes/successCodes override the table.
// One instance per call (attempt).
class BreakerInterceptor final : public grpc::experimental::Interceptor {
 public:
  BreakerInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state,
                     Clock& clock, const internal::TimeoutFlag* timeout_flag)
      : info_(info), state_(state), clock_(clock), timeout_flag_(timeout_flag) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  Outcome Classify(const grpc::Status& status) const;

  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  Clock& clock_;
  // The call's TimeoutInterceptor's, or null.
  const internal::TimeoutFlag* const timeout_flag_;
  bool started_ = false;
  bool rejected_ = false;
  std::string reject_message_;
  Admission admission_;
  // Wall-clock start, to compare with the context's deadline (the breaker's
  // own clock may be simulated).
  absl::Time real_start_;
};

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
