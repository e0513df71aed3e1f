// ResilienceRegistry: weak references to the process's resilience objects,
// locked into strong ones for the length of each request.

#include "grpc_resilience/resilience_registry.h"

#include <algorithm>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc_resilience/client_resilience.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpc_resilience/recent_events.h"
#include "grpc_resilience/server_resilience.h"
#include "src/core/mutex.h"

namespace resilience {

struct ResilienceRegistry::State {
  // What one request reads: strong references, taken under the lock and
  // used outside it.
  struct Snapshot {
    std::vector<std::shared_ptr<ClientResilience>> clients;  // by name
    std::shared_ptr<ServerResilience> server;
    std::string server_name;
    std::shared_ptr<const RecentEvents> events;
  };

  Snapshot Take() const {
    Snapshot s;
    {
      MutexLock lock(&mu);
      for (const std::weak_ptr<ClientResilience>& weak : clients) {
        if (std::shared_ptr<ClientResilience> client = weak.lock()) {
          s.clients.push_back(std::move(client));
        }
      }
      s.server = server.lock();
      s.server_name = server_name;
      s.events = events.lock();
    }
    std::sort(s.clients.begin(), s.clients.end(),
              [](const auto& a, const auto& b) { return a->name() < b->name(); });
    return s;
  }

  void AppendMetrics(PrometheusText& text) const {
    const Snapshot s = Take();
    for (const auto& client : s.clients) client->AppendMetrics(text);
    if (s.server != nullptr) s.server->AppendMetrics(text);
  }

  StatusReport Status() const {
    const Snapshot s = Take();
    StatusReport report;
    for (const auto& client : s.clients) client->AppendStatus(report);
    if (s.server != nullptr) s.server->AppendStatus(report, s.server_name);
    if (s.events != nullptr) s.events->AppendStatus(report);
    return report;
  }

  // The registered channel named `channel`; NotFound naming it and the
  // registered ones when none has that name.
  static absl::StatusOr<std::shared_ptr<ClientResilience>> ChannelNamed(const Snapshot& s,
                                                                        absl::string_view channel) {
    std::vector<std::string> names;
    for (const auto& client : s.clients) {
      if (client->name() == channel) return client;
      names.push_back(absl::StrCat("'", client->name(), "'"));
    }
    return absl::NotFoundError(
        names.empty() ? absl::StrCat("no channel '", channel, "': no channel is registered")
                      : absl::StrCat("no channel '", channel, "'; the channels are ",
                                     absl::StrJoin(names, ", ")));
  }

  absl::Status Control(const BreakerCommandRequest& request) const {
    const absl::StatusOr<std::shared_ptr<ClientResilience>> client =
        ChannelNamed(Take(), request.channel);
    if (!client.ok()) return client.status();
    if (!request.endpoint.empty()) {
      return (*client)->ControlEndpointBreaker(request.method, request.endpoint, request.command,
                                               request.origin);
    }
    return (*client)->ControlBreaker(request.method, request.command, request.origin);
  }

  absl::Status SetEnforcement(const EnforcementRequest& request) const {
    if (!request.server.empty()) {
      const Snapshot s = Take();
      if (s.server == nullptr) {
        return absl::NotFoundError(
            absl::StrCat("no server '", request.server, "': no server is registered"));
      }
      if (s.server_name != request.server) {
        return absl::NotFoundError(absl::StrCat("no server '", request.server,
                                                "'; the server is '", s.server_name, "'"));
      }
      return s.server->SetEnforcement(request.method, request.policy, request.mode,
                                      request.origin);
    }
    const absl::StatusOr<std::shared_ptr<ClientResilience>> client =
        ChannelNamed(Take(), request.channel);
    if (!client.ok()) return client.status();
    return (*client)->SetEnforcement(request.method, request.policy, request.mode, request.origin);
  }

  mutable Mutex mu;
  std::vector<std::weak_ptr<ClientResilience>> clients ABSL_GUARDED_BY(mu);
  std::weak_ptr<ServerResilience> server ABSL_GUARDED_BY(mu);
  std::string server_name ABSL_GUARDED_BY(mu);
  std::weak_ptr<const RecentEvents> events ABSL_GUARDED_BY(mu);
};

ResilienceRegistry::ResilienceRegistry() : state_(std::make_shared<State>()) {}
ResilienceRegistry::~ResilienceRegistry() = default;

absl::Status ResilienceRegistry::Add(const std::shared_ptr<ClientResilience>& client) {
  if (client == nullptr) return absl::InvalidArgumentError("ResilienceRegistry::Add: null client");
  MutexLock lock(&state_->mu);
  auto& clients = state_->clients;
  // Drop the destroyed ones while looking for a clash.
  clients.erase(std::remove_if(clients.begin(), clients.end(),
                               [](const auto& weak) { return weak.expired(); }),
                clients.end());
  for (const std::weak_ptr<ClientResilience>& weak : clients) {
    const std::shared_ptr<ClientResilience> other = weak.lock();
    if (other == nullptr) continue;
    if (other == client) return absl::OkStatus();
    if (other->name() == client->name()) {
      return absl::AlreadyExistsError(absl::StrCat(
          "ResilienceRegistry::Add: a channel named '", client->name(),
          "' is already registered; give each ClientResilience its own Options::name"));
    }
  }
  clients.push_back(client);
  return absl::OkStatus();
}

absl::Status ResilienceRegistry::Add(const std::shared_ptr<ServerResilience>& server,
                                     std::string name) {
  if (server == nullptr) return absl::InvalidArgumentError("ResilienceRegistry::Add: null server");
  MutexLock lock(&state_->mu);
  const std::shared_ptr<ServerResilience> other = state_->server.lock();
  if (other != nullptr && other != server) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ResilienceRegistry::Add: server '", name, "': server '", state_->server_name,
        "' is already registered, and server metrics carry no server label; remove it first"));
  }
  state_->server = server;
  state_->server_name = std::move(name);
  return absl::OkStatus();
}

void ResilienceRegistry::SetEvents(const std::shared_ptr<const RecentEvents>& events) {
  MutexLock lock(&state_->mu);
  state_->events = events;
}

bool ResilienceRegistry::Remove(const ClientResilience* client) {
  MutexLock lock(&state_->mu);
  auto& clients = state_->clients;
  bool found = false;
  clients.erase(std::remove_if(clients.begin(), clients.end(),
                               [&](const std::weak_ptr<ClientResilience>& weak) {
                                 const std::shared_ptr<ClientResilience> c = weak.lock();
                                 if (c == nullptr) return true;
                                 if (c.get() != client) return false;
                                 found = true;
                                 return true;
                               }),
                clients.end());
  return found;
}

bool ResilienceRegistry::Remove(const ServerResilience* server) {
  MutexLock lock(&state_->mu);
  const std::shared_ptr<ServerResilience> current = state_->server.lock();
  if (current == nullptr || current.get() != server) return false;
  state_->server.reset();
  state_->server_name.clear();
  return true;
}

std::vector<std::string> ResilienceRegistry::ChannelNames() const {
  std::vector<std::string> names;
  for (const auto& client : state_->Take().clients) names.push_back(client->name());
  return names;
}

void ResilienceRegistry::AppendMetrics(PrometheusText& text) const { state_->AppendMetrics(text); }

StatusReport ResilienceRegistry::Status() const { return state_->Status(); }

absl::Status ResilienceRegistry::Control(const BreakerCommandRequest& request) const {
  return state_->Control(request);
}

absl::Status ResilienceRegistry::SetEnforcement(const EnforcementRequest& request) const {
  return state_->SetEnforcement(request);
}

MetricsHttpServer::RenderFunction ResilienceRegistry::Render() const {
  return [state = state_] {
    PrometheusText text;
    state->AppendMetrics(text);
    return text.Finish();
  };
}

absl::StatusOr<MetricsHttpServer::Options> ResilienceRegistry::ServeOptions(
    MetricsHttpServer::Options options) const {
  if (options.status) {
    return absl::InvalidArgumentError(
        "ResilienceRegistry::ServeOptions: options.status is set; the registry fills it, leave "
        "it empty");
  }
  if (options.admin.control) {
    return absl::InvalidArgumentError(
        "ResilienceRegistry::ServeOptions: options.admin.control is set; the registry fills it, "
        "leave it empty");
  }
  if (options.admin.enforcement) {
    return absl::InvalidArgumentError(
        "ResilienceRegistry::ServeOptions: options.admin.enforcement is set; the registry fills "
        "it, leave it empty");
  }
  options.status = [state = state_] { return state->Status(); };
  options.admin.control = [state = state_](const BreakerCommandRequest& request) {
    return state->Control(request);
  };
  options.admin.enforcement = [state = state_](const EnforcementRequest& request) {
    return state->SetEnforcement(request);
  };
  return options;
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> ResilienceRegistry::Serve(
    MetricsHttpServer::Options options) const {
  absl::StatusOr<MetricsHttpServer::Options> served = ServeOptions(std::move(options));
  if (!served.ok()) return served.status();
  return MetricsHttpServer::Start(*std::move(served), Render());
}

}  // namespace resilience
