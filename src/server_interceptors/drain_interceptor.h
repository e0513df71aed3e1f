// File: src/server_interceptors/drain_interceptor.h
//
// The first step of a graceful shutdown: calls that arrive once the server
// drains (ServerResilienceImpl::Drain()) are refused UNAVAILABLE, which clients
// retry, while the calls that arrived before finish.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_DRAIN_INTERCEPTOR_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_DRAIN_INTERCEPTOR_H_

#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/server_chain_factory.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

// DrainInterceptor
//
// One per call, made when the call arrives:
//   - before the server drains: counts the call as open
//     (ServerResilienceImpl::open_calls()) until the interceptor is destroyed,
//     which gRPC does once the handler has returned and the call has
//     closed (its status written), so Drain() knows when the calls it must
//     let finish are done, and whether a stream was among them;
//   - once it drains: the call is refused: added to CallVerdicts (a
//     GuardedService skips its handler), and at PRE_SEND_STATUS its status
//     becomes UNAVAILABLE "<method>: server shutting down" with a
//     `grpc-retry-pushback-ms` of kDrainPushback, so that retrying clients
//     are not sending when the server's GOAWAY goes out (gRPC 1.51 cancels
//     a call that reaches a server after its Shutdown(): the client sees
//     CANCELLED, which no client retries); in the drain's last kParkWindow
//     the refused call waits (no Proceed()) until
//     ServerResilienceImpl::ReleaseRefusedCalls(), after the GOAWAY, so that a
//     client that calls again at once is not calling when it goes out.
// Registered first of ours: its PRE_SEND_STATUS runs before the others', so
// they count the UNAVAILABLE it sends. One instance per call; gRPC
// serializes its hooks.
class DrainInterceptor final : public grpc::experimental::Interceptor {
 public:
  DrainInterceptor(grpc::experimental::ServerRpcInfo* info, ServerResilienceImpl& resilience);
  ~DrainInterceptor() override;

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override;

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  ServerResilienceImpl& resilience_;
  const bool refuse_;  // arrived while draining
};

// MakeDrainInterceptor()
//
// The first factory of ours: first lets the throttle decide the call on
// arrival (DecideOnArrival()); a call rejected then gets no interceptor.
// A DrainInterceptor for every other call.
grpc::experimental::Interceptor* MakeDrainInterceptor(ServerResilienceImpl& resilience,
                                                      grpc::experimental::ServerRpcInfo* info);

using DrainInterceptorFactory = ServerChainFactory<MakeDrainInterceptor>;

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_DRAIN_INTERCEPTOR_H_
