// File: src/server_interceptors/server_metrics_interceptor.h
//
// The server interceptor of calls that get neither a throttle nor fault
// injection: it only counts them (ServerResilienceOptions::metrics).

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_METRICS_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_METRICS_INTERCEPTOR_H_

#include <memory>
#include <utility>

#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

// ServerMetricsInterceptor
//
// Counts one call of a method without throttle or fault injection: in
// flight from POST_RECV_INITIAL_METADATA (the call's receipt) to
// PRE_SEND_STATUS, where its status code and handler latency are counted
// (ServerCallMeter); a call that closes without a status leaves in_flight
// when the interceptor is destroyed. Changes nothing. Created by the
// ThrottleInterceptorFactory (the last of ours, whose send hooks run last)
// for the calls that get no other interceptor of ours. One instance per
// call; gRPC serializes its hooks.
class ServerMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit ServerMetricsInterceptor(std::shared_ptr<ServerMethodState> state)
      : state_(std::move(state)) {}
  ~ServerMetricsInterceptor() override { meter_.Abandon(*state_); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  // The method's state the call started with, held to its end.
  const std::shared_ptr<ServerMethodState> state_;
  ServerCallMeter meter_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_METRICS_INTERCEPTOR_H_
