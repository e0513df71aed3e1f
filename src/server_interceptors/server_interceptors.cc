#include "src/server_interceptors/server_interceptors.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/global_limits/fleet_limit_backend.h"
#include "grpcpp/health_check_service_interface.h"
#include "src/server_interceptors/drain_interceptor.h"
#include "src/server_interceptors/fault_injection_interceptor.h"
#include "src/server_interceptors/throttle_interceptor.h"

namespace resilience {

ServerInterceptorFactoryList ServerInterceptorFactories(std::shared_ptr<ServerResilienceImpl> state) {
  // gRPC 1.51 runs server interceptors' receive hooks (POST_RECV_*) from the
  // last registered to the first, and send hooks in registration order (see
  // RunInterceptorsPostRecv / SetReverse in call_op_set.h). The throttle must
  // decide before fault injection at POST_RECV_INITIAL_METADATA, so it is
  // registered last. Its factory also makes the metrics-only interceptor of
  // calls that get neither (ServerResilienceImpl's `metrics`): the last of ours
  // in send order, so the status the counting interceptor sees is the one
  // sent, whichever it is.
  // The drain interceptor is first: its PRE_SEND_STATUS, which refuses a
  // call that arrived during a shutdown, comes before the others count it.
  ServerInterceptorFactoryList factories;
  factories.push_back(std::make_unique<DrainInterceptorFactory>(state));
  factories.push_back(std::make_unique<FaultInjectionInterceptorFactory>(state));
  factories.push_back(std::make_unique<ThrottleInterceptorFactory>(state));
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
  // can get none at all (ServerResilienceImpl::decide_on_arrival()).
  state->set_decide_on_arrival(options.inner_interceptors.empty() &&
                               options.outer_interceptors.empty());
  ServerInterceptorFactoryList all = std::move(options.inner_interceptors);
  for (auto& ours : ServerInterceptorFactories(state)) all.push_back(std::move(ours));
  for (auto& outer : options.outer_interceptors) all.push_back(std::move(outer));
  builder.experimental().SetInterceptorCreators(std::move(all));
  return std::make_shared<ServerResilience>(std::move(state), std::move(warnings));
}

}  // namespace resilience
