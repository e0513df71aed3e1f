/// \file include/grpc_resilience/resilience_registry.h
///
/// The process's resilience objects in one place, for the operations
/// endpoint: the ClientResilience of each channel, the ServerResilience and
/// the RecentEvents, served together by one MetricsHttpServer (/metrics, the
/// status page, /status.json and the admin endpoint's breaker commands).
/// Library grpc_resilience::metrics_http. docs/operations.md, "One endpoint
/// for the whole process".

#ifndef GRPC_RESILIENCE_RESILIENCE_REGISTRY_H_
#define GRPC_RESILIENCE_RESILIENCE_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/metrics_http.h"
#include "grpc_resilience/status_report.h"

namespace resilience {

class ClientResilience;
class ServerResilience;
class RecentEvents;
class PrometheusText;

/// ResilienceRegistry
///
/// A list of the process's resilience objects, added and removed at any
/// time, and the callbacks that serve them all: ServeOptions() fills a
/// MetricsHttpServer's status page and admin control, Render() its
/// /metrics, Serve() does both and starts it.
///
/// Ownership: the registry holds its objects weakly (std::weak_ptr). It never
/// keeps one alive; an object destroyed while registered is dropped from the
/// list and never touched again. Each request (a scrape, a status page, a
/// command) takes its own reference to the objects it reads for as long as
/// it reads them, so an object removed or released meanwhile is destroyed
/// once that request is done with it, never during it; a request that begins
/// after Remove() returned does not see the object. The callbacks handed to
/// a MetricsHttpServer share the list, not the registry: the registry may be
/// destroyed before the server.
///
/// Thread-safe: the objects' methods run outside the registry's lock.
///
/// Example:
/// \code
///   ResilienceRegistry registry;
///   registry.Add(channel.resilience);            // ResilientChannel's
///   registry.Add(server_resilience, address);    // AddServerInterceptors()'
///   registry.SetEvents(recent);                  // the RecentEvents given to both
///   MetricsHttpServer::Options options;
///   options.port = 9464;
///   options.admin.enabled = true;
///   absl::StatusOr<std::unique_ptr<MetricsHttpServer>> http = registry.Serve(options);
/// \endcode
class GRPC_RESILIENCE_EXPORT ResilienceRegistry {
 public:
  /// An empty registry.
  ResilienceRegistry();
  /// Forgets the objects; servers it serves keep serving the same list.
  ~ResilienceRegistry();
  ResilienceRegistry(const ResilienceRegistry&) = delete;
  ResilienceRegistry& operator=(const ResilienceRegistry&) = delete;

  /// Add()
  ///
  /// Registers a channel's state under its name() (the admin endpoint's
  /// `channel` field, the `channel` label of its metrics). InvalidArgument
  /// for null; AlreadyExists when a registered channel (alive) has the same
  /// name, since commands and metrics could not tell them apart. Adding the
  /// same object again is OK and changes nothing.
  absl::Status Add(const std::shared_ptr<ClientResilience>& client);
  /// Registers a server's state; `name` (e.g. its address) fills the
  /// `server` field of its status rows. InvalidArgument for null;
  /// FailedPrecondition when another server (alive) is registered: server
  /// metrics carry no server label, so two would collide on /metrics.
  /// Adding the same object again replaces its name.
  absl::Status Add(const std::shared_ptr<ServerResilience>& server, std::string name = "");
  /// The recent events the status page shows (one RecentEvents, e.g. given
  /// to every object's Options::events); null: none.
  void SetEvents(const std::shared_ptr<const RecentEvents>& events);

  /// Remove()
  ///
  /// Unregisters the object; false when it was not registered (or is
  /// already destroyed). Requests that begin afterwards do not touch it.
  ///@{
  bool Remove(const ClientResilience* client);
  bool Remove(const ServerResilience* server);
  ///@}

  /// The names of the registered channels (alive), sorted.
  std::vector<std::string> ChannelNames() const;

  /// AppendMetrics()
  ///
  /// Every registered object's AppendMetrics() into `text`: the channels in
  /// name order, then the server (e.g. as a PrometheusCollectable's source).
  void AppendMetrics(PrometheusText& text) const;

  /// Status()
  ///
  /// Every registered object's AppendStatus() (channels in name order, then
  /// the server with its name) and the events' into one report.
  StatusReport Status() const;

  /// Control()
  ///
  /// Carries out an admin command on the channel named request.channel:
  /// ClientResilience::ControlEndpointBreaker() when request.endpoint is
  /// set, ControlBreaker() otherwise (their errors as they are). NotFound
  /// naming the channel and the registered ones when none has that name.
  absl::Status Control(const BreakerCommandRequest& request) const;

  /// SetEnforcement()
  ///
  /// Sets a policy's enforcement mode (docs/shadow-mode.md) on the channel
  /// named request.channel (ClientResilience::SetEnforcement()) or, with
  /// request.server, on the server registered under that name
  /// (ServerResilience::SetEnforcement()); their errors as they are.
  /// NotFound naming the channel or server and the registered ones when
  /// none has that name.
  absl::Status SetEnforcement(const EnforcementRequest& request) const;

  /// Render()
  ///
  /// A MetricsHttpServer render callback: AppendMetrics() into a fresh
  /// PrometheusText, finished.
  MetricsHttpServer::RenderFunction Render() const;

  /// ServeOptions()
  ///
  /// `options` with status set to Status(), admin.control to Control() and
  /// admin.enforcement to SetEnforcement() (the admin endpoint stays as
  /// options.admin.enabled says, with MetricsHttpServer's request rules).
  /// InvalidArgument when `options` already has a status, an admin.control
  /// or an admin.enforcement callback: the registry would replace it.
  absl::StatusOr<MetricsHttpServer::Options> ServeOptions(
      MetricsHttpServer::Options options) const;

  /// Serve()
  ///
  /// MetricsHttpServer::Start(ServeOptions(options), Render()): /metrics,
  /// /status, /status.json and (when options.admin.enabled)
  /// /admin/breaker and /admin/enforcement for every registered object. ServeOptions()'s and
  /// Start()'s errors.
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Serve(
      MetricsHttpServer::Options options) const;

 private:
  struct State;  // the list and its lock, shared with the served callbacks
  const std::shared_ptr<State> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_RESILIENCE_REGISTRY_H_
