// File: src/server_interceptors/server_call_factory.h
//
// The one server interceptor factory of grpc-resilience: a ServerCall for
// each call.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_FACTORY_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_FACTORY_H_

#include <memory>
#include <utility>

#include "grpcpp/support/server_interceptor.h"
#include "src/server_interceptors/health_reporter.h"
#include "src/server_interceptors/server_call.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

// ServerCallFactory
//
// Makes the ServerCall of each call, sharing the server's
// ServerResilienceImpl. The health service's calls get none
// (IsHealthMethod()): a Watch stream lasts as long as the client's channel
// and must not hold up a drain, nor be throttled or failed by fault
// injection meant for the application's methods. A call the throttle
// rejects on arrival gets none either (ServerCall::rejected_on_arrival()):
// gRPC 1.51 then skips its interception machinery (interceptor_common.h:
// RunInterceptors() returns at once for an empty list).
//
// `decide_on_arrival`: whether ours are the server's only interceptors,
// so that a guarded callback-API call may be decided before gRPC runs any
// hook (an outer interceptor of the application's must see a call before
// ours decide it, and a server with one pays gRPC's interception machinery
// on every call anyway). Thread-safe: gRPC may create the interceptors of
// several calls at once; the factory holds nothing but the shared state.
class ServerCallFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  ServerCallFactory(std::shared_ptr<ServerResilienceImpl> state, bool decide_on_arrival)
      : state_(std::move(state)), decide_on_arrival_(decide_on_arrival) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    if (IsHealthMethod(info->method())) return nullptr;
    auto call = std::make_unique<ServerCall>(*state_, info, decide_on_arrival_);
    if (call->rejected_on_arrival()) return nullptr;
    return call.release();
  }

 private:
  const std::shared_ptr<ServerResilienceImpl> state_;
  const bool decide_on_arrival_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_CALL_FACTORY_H_
