// File: src/client_interceptors/metrics_interceptor.h
//
// The interceptor of calls that get none of the chain's others: it only
// counts them (ClientResilience::Options::metrics) and tells the channel's
// retryThrottling how they ended.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_METRICS_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_METRICS_INTERCEPTOR_H_

#include "grpcpp/support/client_interceptor.h"
#include "src/client_interceptors/client_method_state.h"

namespace resilience {

// MetricsInterceptor
//
// Counts one application call: its attempt at the first
// PRE_SEND_INITIAL_METADATA, its status code and latency at
// POST_RECV_STATUS (CallMeter), and feeds the channel's retryThrottling
// (FeedRetryThrottle()). Changes nothing. Created by the
// BreakerInterceptorFactory, and only for calls that have no retry, timeout
// or breaker interceptor of ours: a method without a policy, or one whose
// policy does nothing on this call (e.g. a stream of a method with only a
// per-attempt timeout). One instance per call.
class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(grpc::experimental::ClientRpcInfo* info, ClientMethodState* state)
      : info_(info), state_(state) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  grpc::experimental::ClientRpcInfo* const info_;
  ClientMethodState* const state_;
  bool started_ = false;
  CallMeter meter_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_METRICS_INTERCEPTOR_H_
