// File: src/server_interceptors/server_interceptors.h
//
// The library's own route to the server interceptors
// (grpc_resilience/server_interceptors.h): over a ServerResilienceImpl, and
// with the clock of the throttles given (tests, benches: a SimulatedClock).

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_INTERCEPTORS_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_INTERCEPTORS_H_

#include <memory>

#include "grpc_resilience/server_interceptors.h"
#include "grpcpp/server_builder.h"
#include "src/core/clock.h"
#include "src/policy/policy_set_access.h"
#include "src/server_interceptors/server_resilience_impl.h"

namespace resilience {

// ServerInterceptorFactories()
//
// Our factory (one: ServerCallFactory), sharing `state`.
// `decide_on_arrival`: ours are the server's only interceptors (see
// ServerCallFactory); off for a list that may be composed with others.
ServerInterceptorFactoryList ServerInterceptorFactories(
    std::shared_ptr<ServerResilienceImpl> state, bool decide_on_arrival = false);

// AddServerInterceptors()
//
// The public AddServerInterceptors(), whose throttles time calls on `clock`
// (it must outlive the server).
std::shared_ptr<ServerResilience> AddServerInterceptors(grpc::ServerBuilder& builder,
                                                        PolicySet policies,
                                                        ServerResilienceOptions options,
                                                        Clock& clock);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SERVER_INTERCEPTORS_H_
