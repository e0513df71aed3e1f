// The floor of any client interceptor on gRPC 1.51 (docs/retry-cost.md, "A
// non-binding bulkhead"): an interceptor that calls Proceed() at every hook
// and does nothing else (no hijack, no state, no lookup). gRPC still makes
// it for each call (CreateClientInterceptor) and runs its Intercept() for
// each batch of the call, which is what having any interceptor on a call
// costs; a channel whose only interceptor is this one, made through
// CreateCustomChannelWithInterceptors as CreateResilientChannel() makes
// ours, is the baseline a one-stage policy (a bulkhead alone) compares
// with. A benchmark baseline, not a library piece.

#ifndef GRPC_RESILIENCE_BENCH_PASSTHROUGH_INTERCEPTOR_H_
#define GRPC_RESILIENCE_BENCH_PASSTHROUGH_INTERCEPTOR_H_

#include "grpcpp/support/client_interceptor.h"

namespace resilience::bench {

class PassthroughInterceptor final : public grpc::experimental::Interceptor {
 public:
  // What the channel is made with: a new interceptor per call.
  class Factory final : public grpc::experimental::ClientInterceptorFactoryInterface {
   public:
    grpc::experimental::Interceptor* CreateClientInterceptor(
        grpc::experimental::ClientRpcInfo* /*info*/) override {
      return new PassthroughInterceptor();
    }
  };

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    methods->Proceed();
  }
};

}  // namespace resilience::bench

#endif  // GRPC_RESILIENCE_BENCH_PASSTHROUGH_INTERCEPTOR_H_
