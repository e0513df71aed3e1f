/// \file include/grpc_resilience/grpc_resilience.h
///
/// The whole library: client, server and policies.

/// \mainpage grpc-resilience API reference
///
/// The public headers of grpc-resilience, everything in namespace
/// resilience. Link what you use: `grpc_resilience::client`,
/// `grpc_resilience::server`, and the optional `grpc_resilience::metrics_http`,
/// `grpc_resilience::redis_limits` and `grpc_resilience::prometheus_cpp`. How the pieces behave is in the
/// guide, docs/ of the repository; this reference is generated from the
/// headers' comments (scripts/api_reference.sh, docs/api-reference.md).
///
/// | header | what it gives |
/// |---|---|
/// | grpc_resilience.h | client.h, server.h and policy.h at once |
/// | policy.h | PolicySet: the policies of one JSON file |
/// | policy_update.h | PolicyUpdate: what a live policy update did |
/// | policy_file_watcher.h | PolicyFileWatcher: reloads a policy file into the process's objects when it changes |
/// | client.h | everything a client needs, the headers below |
/// | resilient_channel.h | CreateResilientChannel(): a channel with retry, timeout and breaker |
/// | client_resilience.h | ClientResilience: a channel's counters, breakers, metrics and updates |
/// | local_rejection.h | RejectedLocally(): whether our breaker or bulkhead refused a call |
/// | fallback.h | SetFallback(), FellBack(): a method's answer to a refused or failed call |
/// | criticality.h, criticality_level.h | Criticality: a call's level, set and propagated |
/// | enforcement_mode.h | EnforcementMode: a policy that enforces, only shadows, or is off |
/// | server.h | everything a server needs, the headers below |
/// | server_interceptors.h | AddServerInterceptors(): throttling and fault injection on a server |
/// | server_resilience.h | ServerResilience: a server's counters, metrics, updates and drain |
/// | redis_limits.h | RedisFleetLimits(): fleet-wide rate limits in Redis (optional) |
/// | events.h | ResilienceEvents, LogEvents, RecentEvents: what happens, as it happens |
/// | breaker_state.h | BreakerState, BreakerSnapshot and the rest of a breaker's words |
/// | metrics.h | PrometheusText and the snapshots of the counters |
/// | prometheus_collectable.h | PrometheusCollectable: the metrics on a prometheus-cpp Exposer (optional) |
/// | metrics_http.h | MetricsHttpServer: /metrics, status page, admin endpoint (optional) |
/// | resilience_registry.h | ResilienceRegistry: every client and server object of the process on one MetricsHttpServer (optional) |
/// | status_report.h | StatusReport: what the status page shows |
/// | export.h | GRPC_RESILIENCE_EXPORT: what the shared library exports |

/// \namespace resilience
/// The public API of grpc-resilience.

#ifndef GRPC_RESILIENCE_GRPC_RESILIENCE_H_
#define GRPC_RESILIENCE_GRPC_RESILIENCE_H_

#include "grpc_resilience/client.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/server.h"

#endif  // GRPC_RESILIENCE_GRPC_RESILIENCE_H_
