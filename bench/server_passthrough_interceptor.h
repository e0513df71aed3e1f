// The floor of any server interceptor on gRPC 1.51: one that calls
// Proceed() at every hook (but the cancel hook, which wants none) and does
// nothing else. gRPC still makes it for each call and runs the interception
// machinery for each batch, which is what having any server interceptor at
// all costs. A benchmark baseline, not a library piece.

#ifndef GRPC_RESILIENCE_BENCH_SERVER_PASSTHROUGH_INTERCEPTOR_H_
#define GRPC_RESILIENCE_BENCH_SERVER_PASSTHROUGH_INTERCEPTOR_H_

#include "grpcpp/support/server_interceptor.h"

namespace resilience::bench {

class ServerPassthroughInterceptor final : public grpc::experimental::Interceptor {
 public:
  // What the server is built with: a new interceptor per call.
  class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
   public:
    grpc::experimental::Interceptor* CreateServerInterceptor(
        grpc::experimental::ServerRpcInfo* /*info*/) override {
      return new ServerPassthroughInterceptor();
    }
  };

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_CANCEL)) {
      return;
    }
    methods->Proceed();
  }
};

}  // namespace resilience::bench

#endif  // GRPC_RESILIENCE_BENCH_SERVER_PASSTHROUGH_INTERCEPTOR_H_
