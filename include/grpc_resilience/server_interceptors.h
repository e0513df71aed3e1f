/// \file include/grpc_resilience/server_interceptors.h
///
/// One call adds grpc-resilience's server interceptors, in the right order, to
/// a ServerBuilder, for every method the policies give a `throttle` or a
/// `faultInjection`, and (ServerResilienceOptions::metrics, on by default) a
/// minimal one that only counts the calls of every other method.
///
/// Register the services behind the guard too, so that a rejected call never
/// runs their handlers (ServerResilience::RegisterGuardedService()).
///
/// Example:
/// \code
///   grpc::ServerBuilder builder;
///   std::shared_ptr<resilience::ServerResilience> resilience =
///       resilience::AddServerInterceptors(builder, *policies);
///   for (const std::string& w : resilience->warnings()) std::cerr << w << "\n";
///   absl::Status s =
///       resilience->RegisterGuardedService<cache::v1::CacheService>(builder, &service);
///   ...
///   resilience->Stats("/cache.v1.CacheService/Get").rejected_concurrency;
/// \endcode

#ifndef GRPC_RESILIENCE_SERVER_INTERCEPTORS_H_
#define GRPC_RESILIENCE_SERVER_INTERCEPTORS_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/server_resilience.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/server_interceptor.h"

namespace resilience {

class FleetLimitBackend;  // where throttle.global leases tokens; internal to the library

/// The server interceptor factories of one server, in gRPC's order.
using ServerInterceptorFactoryList =
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>;

/// ServerInterceptorFactories()
///
/// The factories in their working order, sharing `state`; for callers that
/// combine them with interceptors of their own.
GRPC_RESILIENCE_EXPORT ServerInterceptorFactoryList ServerInterceptorFactories(
    std::shared_ptr<ServerResilience> state);

/// How AddServerInterceptors() sets a server up, beside the policies.
struct GRPC_RESILIENCE_EXPORT ServerResilienceOptions {
  /// Interceptors of your own. gRPC keeps one interceptor list per
  /// ServerBuilder and AddServerInterceptors() sets it, so give yours here.
  /// From the network to the handler:
  ///   outer_interceptors -> drain, throttle, fault injection -> inner_interceptors
  /// (gRPC registers them as inner, ours, outer: it runs receive hooks from
  /// the last registered to the first, send hooks in registration order).
  ///   - outer: every call, before any of ours decides (at
  ///     POST_RECV_INITIAL_METADATA), and the status the client gets at
  ///     PRE_SEND_STATUS: ours rejecting it (RESOURCE_EXHAUSTED `"<method>:
  ///     concurrency limit 5 reached"` with grpc-retry-pushback-ms in the
  ///     trailing metadata), fault injection's abort code and message, a
  ///     drain's UNAVAILABLE, or the handler's.
  ///   - inner: every call too, after ours decided, and at PRE_SEND_STATUS
  ///     the status before ours rewrite it: the handler's, or, for a call
  ///     ours answer without the handler, the guard's placeholder (sync API:
  ///     RESOURCE_EXHAUSTED `"<method>: rejected by a grpc-resilience server
  ///     interceptor"`; callback API: the UNIMPLEMENTED with no message that
  ///     gRPC 1.51's callback handlers answer to a refused request), without
  ///     our pushback trailer.
  /// Within each list, gRPC's order holds: the last given is nearer the
  /// network.
  ///@{
  ServerInterceptorFactoryList outer_interceptors;
  ServerInterceptorFactoryList inner_interceptors;
  ///@}
  /// Told when a throttle starts or stops rejecting (LogEvents prints it),
  /// on a thread of the library's own, in order, with no lock held and no
  /// call waiting (ServerResilience::FlushEvents()); null: nobody.
  std::shared_ptr<ResilienceEvents> events;
  /// Count every method's calls, with or without a policy: by the status
  /// sent, handler latency and in flight (ServerResilience::AppendMetrics(),
  /// AllStats()). A call with neither throttle nor fault injection then gets
  /// a minimal interceptor that only counts; a method name no one vouches
  /// for (an unimplemented one) is counted under
  /// ServerResilience::kUnknownMethod. false: methods without throttle or
  /// fault injection pass through untouched.
  bool metrics = true;
  /// Where fleet-wide rate limits (a policy's throttle.global) lease their
  /// tokens: RedisFleetLimits() of grpc_resilience/redis_limits.h (library
  /// grpc_resilience::redis_limits). Null: none; then a policy with
  /// throttle.global is a warning in ServerResilience::warnings() naming its
  /// path and what to link, and that scope rejects every call
  /// (RESOURCE_EXHAUSTED `"<method>: throttle not usable: <path>: ..."`).
  std::shared_ptr<const FleetLimitBackend> fleet_limits;
  /// Serve the standard health service, grpc.health.v1.Health (gRPC's own
  /// implementation: AddServerInterceptors() calls
  /// grpc::EnableDefaultHealthCheckService(true), a switch for every server
  /// the process builds from then on). The server as a whole ("") and each
  /// service registered behind the guard are SERVING once
  /// ServerResilience::SetServing() says so, and NOT_SERVING as soon as a
  /// drain begins. Its calls pass none of our interceptors. false: the
  /// switch is left as it is.
  bool health = true;
  /// How long a drain (ServerResilience::Drain(), DrainAndShutdown()) keeps
  /// serving the calls that still arrive after it reported NOT_SERVING, as a
  /// Kubernetes readiness probe and a preStop delay do: a client that checks
  /// health may have picked this server before its Watch stream heard
  /// NOT_SERVING, and its call is served rather than refused. Only when the
  /// health service said SERVING (SetServing()) until then; at most half of
  /// the time to the drain's deadline. Then new calls are refused
  /// UNAVAILABLE as before. Zero: refused at once.
  absl::Duration not_serving_grace = absl::Milliseconds(500);
};

/// AddServerInterceptors()
///
/// Sets the builder's interceptor list to `options`' interceptors around
/// grpc-resilience's. Works for the sync and the callback server APIs. The
/// policy file's warnings are in the result's warnings(), and then one per
/// throttle.global without `options.fleet_limits`.
GRPC_RESILIENCE_EXPORT std::shared_ptr<ServerResilience> AddServerInterceptors(
    grpc::ServerBuilder& builder, PolicySet policies, ServerResilienceOptions options = {});

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SERVER_INTERCEPTORS_H_
