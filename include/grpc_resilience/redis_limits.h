/// \file include/grpc_resilience/redis_limits.h
///
/// Fleet-wide rate limits (a policy's throttle.global) kept in Redis: the
/// optional library grpc_resilience::redis_limits (pkg-config:
/// grpc_resilience_redis_limits; needs hiredis, Debian's libhiredis-dev).
/// grpc_resilience::server links no Redis client: a server that does not plug
/// this in and loads a policy with throttle.global warns at
/// AddServerInterceptors() (ServerResilience::warnings(), naming the entry,
/// e.g. "methodConfig[2].throttle.global") and that scope rejects every call,
/// saying why.
///
/// \code
///   #include "grpc_resilience/redis_limits.h"
///   #include "grpc_resilience/server.h"
///
///   // Refused Redis credentials fail the start, not the first lease.
///   if (absl::Status s = resilience::CheckGlobalThrottleCredentials(*policies); !s.ok()) {
///     std::cerr << s.message() << "\n"; return 2;
///   }
///   resilience::ServerResilienceOptions options;
///   options.fleet_limits = resilience::RedisFleetLimits();
///   auto resilience = resilience::AddServerInterceptors(builder, *policies, std::move(options));
/// \endcode
///
/// How the limit behaves (leases, the local share while Redis is unreachable,
/// AUTH): docs/global-rate-limit.md.

#ifndef GRPC_RESILIENCE_REDIS_LIMITS_H_
#define GRPC_RESILIENCE_REDIS_LIMITS_H_

#include <memory>

#include "absl/status/status.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/policy.h"

namespace resilience {

class FleetLimitBackend;  // where fleet-wide limits lease tokens; internal to the library

/// RedisFleetLimits()
///
/// The Redis store of throttle.global, for ServerResilienceOptions::fleet_limits
/// (grpc_resilience/server_interceptors.h). Each scope with a global limit
/// then gets a Redis client of its own (one thread, started at the scope's
/// first call, never blocking a call; the policy's `redis`, `key` and AUTH
/// settings).
GRPC_RESILIENCE_EXPORT std::shared_ptr<const FleetLimitBackend> RedisFleetLimits();

/// CheckGlobalThrottleCredentials()
///
/// For each Redis and set of credentials that `policies`' throttle.global
/// entries name (once each), one connect and AUTH within the entry's
/// timeout. PermissionDenied `"<path>: AUTH as user 'u' with the password of
/// <path>.passwordFile ("...") refused by host:port: WRONGPASS ..."` when
/// Redis refuses them (never the password); InvalidArgument when the
/// password can no longer be read. A Redis that cannot be reached or does
/// not answer in time is not an error here (OK): at run time the scope then
/// admits its local share until Redis answers (docs/global-rate-limit.md).
/// Blocks for up to the timeouts of the entries with credentials.
GRPC_RESILIENCE_EXPORT absl::Status CheckGlobalThrottleCredentials(const PolicySet& policies);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_REDIS_LIMITS_H_
