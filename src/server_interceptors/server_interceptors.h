// File: src/server_interceptors/server_interceptors.h
//
// One call adds grpc-resilience's server interceptors, in the right order, to
// a ServerBuilder, for every method the policies give a `throttle` or a
// `faultInjection`.
//
// Register the services behind the guard too, so that a rejected call never
// runs their handlers (ServerResilience::RegisterGuardedService()).
//
// Example:
//   grpc::ServerBuilder builder;
//   std::shared_ptr<resilience::ServerResilience> resilience =
//       resilience::AddServerInterceptors(builder, *policies);
//   absl::Status s =
//       resilience->RegisterGuardedService<cache::v1::CacheService>(builder, &service);
//   ...
//   resilience->Stats("/cache.v1.CacheService/Get").rejected_concurrency;

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_INTERCEPTORS_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_INTERCEPTORS_H_

#include <memory>
#include <vector>

#include "grpcpp/server_builder.h"
#include "grpcpp/support/server_interceptor.h"
#include "src/breaker/clock.h"
#include "src/policy/policy_set.h"
#include "src/server_interceptors/server_resilience.h"

namespace resilience {

using ServerInterceptorFactoryList =
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>;

// ServerInterceptorFactories()
//
// The factories in their working order, sharing `state`; for callers that
// combine them with interceptors of their own.
ServerInterceptorFactoryList ServerInterceptorFactories(std::shared_ptr<ServerResilience> state);

// AddServerInterceptors()
//
// Sets the builder's interceptors to grpc-resilience's (replacing any set
// before: to combine, use ServerInterceptorFactories()). Works for the sync
// and the callback server APIs. `clock` must outlive the server.
std::shared_ptr<ServerResilience> AddServerInterceptors(grpc::ServerBuilder& builder,
                                                        PolicySet policies,
                                                        Clock& clock = Clock::Real());

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_INTERCEPTORS_H_
