// File: src/server_interceptors/server_chain_factory.h
//
// The one factory class of grpc-resilience's server interceptors.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CHAIN_FACTORY_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CHAIN_FACTORY_H_

#include <memory>
#include <utility>

#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/health_reporter.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

// What a factory of ours gives a call: an interceptor, or null for none.
using ServerInterceptorMaker = grpc::experimental::Interceptor* (*)(
    ServerResilienceImpl& resilience, grpc::experimental::ServerRpcInfo* info);

// ServerChainFactory
//
// The factory of one of our server interceptors, sharing the server's
// ServerResilienceImpl: for each call it returns what `Make` chooses from the
// call's method state. Our factories differ in that function only
// (FaultInjectionInterceptorFactory, ThrottleInterceptorFactory); their
// order is ServerInterceptorFactories()'. The health service's calls get
// none of ours (IsHealthMethod()): a Watch stream lasts as long as the
// client's channel and must not hold up a drain, nor be throttled or failed
// by fault injection meant for the application's methods. Thread-safe: it holds nothing but
// the shared state (itself thread-safe), and gRPC may create the
// interceptors of several calls at once.
template <ServerInterceptorMaker Make>
class ServerChainFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ServerChainFactory(std::shared_ptr<ServerResilienceImpl> state)
      : state_(std::move(state)) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    if (IsHealthMethod(info->method())) return nullptr;
    return Make(*state_, info);
  }

 private:
  const std::shared_ptr<ServerResilienceImpl> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CHAIN_FACTORY_H_
