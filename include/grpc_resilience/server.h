// File: include/grpc_resilience/server.h
//
// Everything a server needs: throttling and fault injection per method, and
// the guard that keeps a rejected call from ever running the handler.
//
//   #include "grpc_resilience/server.h"
//
//   grpc::ServerBuilder builder;
//   auto resilience = resilience::AddServerInterceptors(builder, *policies);
//   absl::Status guarded =
//       resilience->RegisterGuardedService<cache::v1::CacheService>(builder, &service);
//
// How rejections look to clients: docs/server-rejection.md.

#ifndef GRPC_RESILIENCE_SERVER_H_
#define GRPC_RESILIENCE_SERVER_H_

#include "src/global_limits/global_throttle_credentials.h"
#include "src/server_interceptors/server_interceptors.h"
#include "src/server_interceptors/server_resilience.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/metrics.h"
#include "grpc_resilience/policy.h"

#endif  // GRPC_RESILIENCE_SERVER_H_
