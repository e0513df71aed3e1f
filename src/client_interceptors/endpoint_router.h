// File: src/client_interceptors/endpoint_router.h
//
// The library's choice of the endpoint of every unary attempt of a
// channel (policy file: loadBalancingConfig's first entry
// {"resilience_p2c": {}}; docs/routing.md): a gRPC channel per address of
// the target, the EndpointPicker (src/routing) over them, and what gRPC
// knows that the picker needs (each connection's state).

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ENDPOINT_ROUTER_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ENDPOINT_ROUTER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/client_interceptor.h"
#include "grpc_resilience/status_report.h"
#include "src/breaker/endpoint_breakers.h"
#include "src/client_interceptors/endpoint_resolver.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"
#include "src/policy/load_balancing_settings.h"
#include "src/routing/endpoint_picker.h"

namespace resilience {

// EndpointRouter
//
// Made by CreateResilientChannel() when the policy file asks for it and the
// target is one the library resolves (EndpointResolver::Parse()); one per
// channel, shared by its calls (CallEnvironment::router).
//
// Each endpoint gets a channel of its own: the user's credentials and
// arguments, the target's authority (a dns: name's host:port, so TLS host
// checks hold), the file's healthCheckConfig under round_robin (gRPC's
// client-side health checking then holds the connection out of READY while
// the server says NOT_SERVING), and the user's inner interceptors made
// afresh (ResilientChannelOptions::make_inner_interceptors). A thread polls
// every connection's state every 100 ms (gRPC's watch would hold the
// channel and its completion queue past the router's end); a connection
// that comes back READY rejoins the picker (slow start), one that fails
// asks the resolver to resolve again.
//
// Pick(), for each attempt, in tiers: endpoints whose connection is READY
// and that the method's per-endpoint breakers let through (Gate()); else
// those not failing to connect; else every one not forced open, so that
// with all endpoints' breakers open the method's breaker decides, as
// without the router. Never one forced open: with all forced open the
// attempt is refused locally. No endpoint known yet (a name not resolved
// yet): no route, the attempt goes on the channel of the target, as gRPC
// routes it.
//
// Thread-safe.
class EndpointRouter {
 public:
  using InterceptorMaker = std::function<
      std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>()>;

  // One attempt's endpoint: its picker handle and its channel. Empty (no
  // channel): no route.
  struct Route {
    EndpointPicker* picker = nullptr;  // the method's
    std::shared_ptr<EndpointPicker::Endpoint> endpoint;
    std::shared_ptr<grpc::Channel> channel;
    // Every endpoint is forced open: the attempt must not go.
    bool all_forced_open = false;
  };

  // Unimplemented for a target the library does not resolve (the caller
  // warns and leaves routing to gRPC); InvalidArgument for a malformed one.
  static absl::StatusOr<std::unique_ptr<EndpointRouter>> Create(
      const std::string& target, std::shared_ptr<grpc::ChannelCredentials> credentials,
      const grpc::ChannelArguments& args, InterceptorMaker make_inner,
      const LoadBalancingSettings& settings, uint64_t seed, Clock& clock);
  ~EndpointRouter();

  EndpointRouter(const EndpointRouter&) = delete;
  EndpointRouter& operator=(const EndpointRouter&) = delete;

  // PickerFor()
  //
  // The picker of `method`, made at its first use and kept for the
  // channel's life (a policy reload keeps its estimates). One per method:
  // methods differ in latency, and one slow method of a replica must not
  // hide behind another's fast answers.
  std::shared_ptr<EndpointPicker> PickerFor(const std::string& method) ABSL_LOCKS_EXCLUDED(mu_);

  // Pick()
  //
  // The endpoint of an attempt of the method of `picker` (PickerFor()),
  // whose per-endpoint breakers are `breakers` (null: none), the call's
  // earlier attempts having gone to `tried`.
  Route Pick(EndpointPicker& picker, EndpointBreakers* breakers,
             absl::Span<const EndpointPicker::Endpoint* const> tried, bool retry)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Started() / Ended(): EndpointPicker's, for a route Pick() gave.
  static void Started(const Route& route) { route.picker->Started(*route.endpoint); }
  static void Ended(const Route& route, absl::Duration latency, EndpointPicker::Result result,
                    std::optional<double> load) {
    route.picker->Ended(*route.endpoint, latency, result, load);
  }

  // AppendStatus(): one row per method and endpoint, labelled with
  // `channel`.
  void AppendStatus(const std::string& channel, std::vector<RoutedEndpointStatus>& rows)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The target's endpoints now (tests).
  std::vector<std::string> Endpoints() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Connection {
    std::shared_ptr<grpc::Channel> channel;
    // grpc_connectivity_state, polled.
    std::atomic<int> state{0};
    bool lost = false;  // the poller's: failing to connect since last READY
    // EndpointPicker::Out as the last attempt's method found it (breaker
    // open, forced open), for the status.
    std::atomic<int> gate_out{0};
  };
  using Connections = absl::flat_hash_map<std::string, std::shared_ptr<Connection>>;

  EndpointRouter(EndpointResolver::Target target,
                 std::shared_ptr<grpc::ChannelCredentials> credentials,
                 grpc::ChannelArguments args, InterceptorMaker make_inner,
                 const LoadBalancingSettings& settings, uint64_t seed, Clock& clock);

  // The resolver's result: channels made for new endpoints, dropped for
  // gone ones.
  void SetEndpoints(const std::vector<std::string>& endpoints) ABSL_LOCKS_EXCLUDED(mu_);
  void Poll() ABSL_LOCKS_EXCLUDED(mu_);
  // One row of AppendStatus(); `connection` null when the endpoint left.
  static RoutedEndpointStatus StatusRow(const std::string& channel, const std::string& method,
                                        const EndpointPicker::EndpointStats& e,
                                        const Connection* connection);
  std::shared_ptr<const Connections> connections() ABSL_LOCKS_EXCLUDED(mu_);
  // Every method's picker, by method name.
  std::vector<std::pair<std::string, std::shared_ptr<EndpointPicker>>> pickers()
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const grpc::ChannelArguments args_;  // the endpoints' channels' own
  const InterceptorMaker make_inner_;
  const EndpointPicker::Options picker_options_;
  Clock& clock_;
  Mutex mu_;
  std::shared_ptr<const Connections> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);  // the endpoints, in order
  absl::flat_hash_map<std::string, std::shared_ptr<EndpointPicker>> pickers_
      ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  CondVar wake_;
  std::thread poller_;
  // Last: destroyed first, so that its thread ends before the rest.
  std::unique_ptr<EndpointResolver> resolver_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_ENDPOINT_ROUTER_H_
