// File: src/server_interceptors/server_interceptors.h
//
// One call adds grpc-resilience's server interceptors, in the right order, to
// a ServerBuilder, for every method the policies give a `throttle` or a
// `faultInjection`, and (ServerResilienceOptions::metrics, on by default) a
// minimal one that only counts the calls of every other method.
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
#include "src/core/clock.h"
#include "src/policy/policy_set_access.h"
#include "src/server_interceptors/server_resilience.h"

namespace resilience {

using ServerInterceptorFactoryList =
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>;

// ServerInterceptorFactories()
//
// The factories in their working order, sharing `state`; for callers that
// combine them with interceptors of their own.
ServerInterceptorFactoryList ServerInterceptorFactories(std::shared_ptr<ServerResilience> state);

struct ServerResilienceOptions {
  // The throttles' and breakers' clock; must outlive the server.
  Clock* clock = &Clock::Real();
  // Interceptors of your own. gRPC keeps one interceptor list per
  // ServerBuilder and AddServerInterceptors() sets it, so give yours here:
  //   outer_interceptors, ours (fault injection, throttle), inner_interceptors
  // in registration order. All of them see every call, including the ones
  // ours reject (whose handler never runs; their status is the rejection).
  ServerInterceptorFactoryList outer_interceptors;
  ServerInterceptorFactoryList inner_interceptors;
  // Told when a throttle starts or stops rejecting (LogEvents prints it);
  // null: nobody.
  std::shared_ptr<ResilienceEvents> events;
  // Count every method's calls, with or without a policy: by the status
  // sent, handler latency and in flight (ServerResilience::AppendMetrics(),
  // AllStats()); see the ServerResilience constructor. false: methods
  // without throttle or fault injection pass through untouched.
  bool metrics = true;
};

// AddServerInterceptors()
//
// Sets the builder's interceptor list to `options`' interceptors around
// grpc-resilience's. Works for the sync and the callback server APIs.
std::shared_ptr<ServerResilience> AddServerInterceptors(grpc::ServerBuilder& builder,
                                                        PolicySet policies,
                                                        ServerResilienceOptions options = {});

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_INTERCEPTORS_H_
