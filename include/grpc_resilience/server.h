/// \file include/grpc_resilience/server.h
///
/// Everything a server needs: throttling and fault injection per method, and
/// the guard that keeps a rejected call from ever running the handler.
///
/// \code
///   #include "grpc_resilience/server.h"
///
///   grpc::ServerBuilder builder;
///   auto resilience = resilience::AddServerInterceptors(builder, *policies);
///   for (const std::string& w : resilience->warnings()) std::cerr << w << "\n";
///   absl::Status guarded =
///       resilience->RegisterGuardedService<cache::v1::CacheService>(builder, &service);
/// \endcode
///
/// How rejections look to clients: docs/server-rejection.md.

#ifndef GRPC_RESILIENCE_SERVER_H_
#define GRPC_RESILIENCE_SERVER_H_

#include "grpc_resilience/events.h"
#include "grpc_resilience/metrics.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/server_interceptors.h"
#include "grpc_resilience/server_resilience.h"

#endif  // GRPC_RESILIENCE_SERVER_H_
