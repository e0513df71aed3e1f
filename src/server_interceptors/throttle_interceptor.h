// File: src/server_interceptors/throttle_interceptor.h
//
// Server-side throttling per method: a concurrency limit and a rate limit,
// from the method's `throttle` policy.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_THROTTLE_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_THROTTLE_INTERCEPTOR_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/server_resilience.h"

namespace resilience {

// ThrottleInterceptor
//
// Decides at POST_RECV_INITIAL_METADATA, before the handler runs:
//   - concurrency: a slot of the scope's FixedConcurrencyLimiter;
//   - rate: a token of the scope's TokenBucket.
// A rejected call is marked (RejectedByServerInterceptor() is true in the
// handler) and, at PRE_SEND_STATUS, its status becomes RESOURCE_EXHAUSTED
// with a message naming the method and the limit
// ("/cache.v1.CacheService/Get: concurrency limit 5 reached") and a
// `grpc-retry-pushback-ms` trailer: the time until the next token for the rate
// limit, the smoothed latency of admitted calls for the concurrency limit.
//
// Why the status path and not grpc_call_cancel_with_status(): cancelling
// answers the client before the handler returns, but carries no trailer, so
// no pushback; with the status path the handler's early return (one line)
// makes the rejection as cheap, and pushback reaches well-behaved clients.
//
// The slot of an admitted call is released in the destructor: gRPC destroys
// server interceptors only after the handler has returned *and* the call has
// closed, so a slot is never released early (client cancellation and
// deadline included) and never twice. Never calls ServerContext::IsCancelled()
// (it recurses in 1.51's sync server when called from an interceptor).
// One instance per call; gRPC serializes its hooks.
class ThrottleInterceptor final : public grpc::experimental::Interceptor {
 public:
  ThrottleInterceptor(grpc::experimental::ServerRpcInfo* info, ServerMethodState* state,
                      Clock& clock)
      : info_(info), state_(state), clock_(clock) {}
  ~ThrottleInterceptor() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  void Admit(grpc::experimental::InterceptorBatchMethods* methods);

  grpc::experimental::ServerRpcInfo* const info_;
  ServerMethodState* const state_;
  Clock& clock_;
  absl::Time start_;
  bool holds_slot_ = false;   // a concurrency slot to release
  bool admitted_ = false;     // counted in in_flight
  bool rejected_ = false;
  std::string reject_message_;
  std::string pushback_ms_;
  bool status_sent_ = false;
  bool failed_ = false;       // the handler's status counts as a failure
  bool closed_early_ = false; // the call closed before a status was sent
};

class ThrottleInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ThrottleInterceptorFactory(std::shared_ptr<ServerResilience> state)
      : state_(std::move(state)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  const std::shared_ptr<ServerResilience> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_THROTTLE_INTERCEPTOR_H_
