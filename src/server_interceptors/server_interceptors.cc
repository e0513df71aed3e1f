#include "src/server_interceptors/server_interceptors.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/global_limits/fleet_limit_backend.h"
#include "grpcpp/health_check_service_interface.h"
#include "src/server_interceptors/server_call_factory.h"

namespace resilience {

ServerInterceptorFactoryList ServerInterceptorFactories(std::shared_ptr<ServerResilienceImpl> state,
                                                       bool decide_on_arrival) {
  // One factory, one interceptor per call (ServerCall), whose stages run in
  // their own fixed order: where it sits among the application's
  // interceptors is AddServerInterceptors()'s choice.
  ServerInterceptorFactoryList factories;
  factories.push_back(std::make_unique<ServerCallFactory>(std::move(state), decide_on_arrival));
  return factories;
}

ServerInterceptorFactoryList ServerInterceptorFactories(std::shared_ptr<ServerResilience> state) {
  return ServerInterceptorFactories(state->impl());
}

std::shared_ptr<ServerResilience> AddServerInterceptors(grpc::ServerBuilder& builder,
                                                        PolicySet policies,
                                                        ServerResilienceOptions options) {
  return AddServerInterceptors(builder, std::move(policies), std::move(options), Clock::Real());
}

std::shared_ptr<ServerResilience> AddServerInterceptors(grpc::ServerBuilder& builder,
                                                        PolicySet policies,
                                                        ServerResilienceOptions options,
                                                        Clock& clock) {
  // A `bulkhead` is the client's (one file serves both sides), and so is
  // gRPC's built-in retry of streams: the server does not warn of them.
  std::vector<std::string> warnings = PolicySetAccess::Table(policies).server_warnings();
  if (options.fleet_limits == nullptr) {
    // Not silently ignored: each such scope rejects every call (LimitsFor()).
    for (const MethodPolicy& policy : PolicySetAccess::Table(policies).policies()) {
      if (!policy.throttle) continue;
      for (std::string& m : FleetLimitBackend::MissingMessages(*policy.throttle)) {
        warnings.push_back(std::move(m));
      }
    }
  }
  // Read by the builder when it builds the server.
  if (options.health) grpc::EnableDefaultHealthCheckService(true);
  auto state = std::make_shared<ServerResilienceImpl>(std::move(policies), clock,
                                                      std::move(options.events), options.metrics,
                                                      std::move(options.fleet_limits),
                                                      options.health ? options.not_serving_grace
                                                                     : absl::ZeroDuration());
  // gRPC 1.51 runs a server's receive hooks from the last registered to the
  // first and its send hooks in registration order: the last registered is
  // the one nearest the network. So the application's outer interceptors
  // go last (they see a call arrive before our throttle decides, and its
  // status after ours rewrote it: the status the client gets), and its inner
  // ones first (nearest the handler).
  // With no interceptor of the application's, a call the throttle rejects
  // can get none at all (ServerCallFactory's decide_on_arrival).
  const bool decide_on_arrival =
      options.inner_interceptors.empty() && options.outer_interceptors.empty();
  ServerInterceptorFactoryList all = std::move(options.inner_interceptors);
  for (auto& ours : ServerInterceptorFactories(state, decide_on_arrival)) {
    all.push_back(std::move(ours));
  }
  for (auto& outer : options.outer_interceptors) all.push_back(std::move(outer));
  builder.experimental().SetInterceptorCreators(std::move(all));
  return std::make_shared<ServerResilience>(std::move(state), std::move(warnings));
}

}  // namespace resilience
