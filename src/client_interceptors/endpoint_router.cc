#include "src/client_interceptors/endpoint_router.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "grpc/grpc.h"
#include "grpcpp/create_channel.h"
#include "src/client_interceptors/channel_args.h"
#include "src/policy/json_text.h"

namespace resilience {
namespace {

constexpr absl::Duration kPollEvery = absl::Milliseconds(100);

// The endpoints' channels' arguments: the user's, the target's authority
// unless they set one, and a service config of only what one address
// needs: round_robin with the file's health check (gRPC 1.51 checks health
// under round_robin only), else pick_first. gRPC takes the last value of a
// key, so these override the channel's own service config.
grpc::ChannelArguments EndpointArgs(grpc::ChannelArguments args,
                                    const EndpointResolver::Target& target,
                                    const LoadBalancingSettings& settings) {
  if (!target.authority.empty() && !StringArg(args, GRPC_ARG_DEFAULT_AUTHORITY).has_value()) {
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, target.authority);
  }
  if (settings.health_check_service.has_value()) {
    args.SetServiceConfigJSON(absl::StrCat(
        "{\"loadBalancingConfig\": [{\"round_robin\": {}}], \"healthCheckConfig\": "
        "{\"serviceName\": ",
        internal::QuoteJson(*settings.health_check_service), "}}"));
  } else {
    args.SetServiceConfigJSON("{\"loadBalancingConfig\": [{\"pick_first\": {}}]}");
  }
  return args;
}

EndpointPicker::Options PickerOptions(const LoadBalancingSettings& settings, uint64_t seed) {
  EndpointPicker::Options options;
  options.slow_start = settings.routing->slow_start;
  options.seed = seed;
  return options;
}

const char* OutName(EndpointPicker::Out out) {
  switch (out) {
    case EndpointPicker::Out::kNo: return "";
    case EndpointPicker::Out::kConnecting: return "not connected";
    case EndpointPicker::Out::kBreakerOpen: return "breaker open";
    case EndpointPicker::Out::kForcedOpen: return "forced open";
  }
  return "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<EndpointRouter>> EndpointRouter::Create(
    const std::string& target, std::shared_ptr<grpc::ChannelCredentials> credentials,
    const grpc::ChannelArguments& args, InterceptorMaker make_inner,
    const LoadBalancingSettings& settings, uint64_t seed, Clock& clock) {
  absl::StatusOr<EndpointResolver::Target> parsed = EndpointResolver::Parse(target);
  if (!parsed.ok()) return parsed.status();
  std::unique_ptr<EndpointRouter> router(new EndpointRouter(
      *std::move(parsed), std::move(credentials), args, std::move(make_inner), settings, seed,
      clock));
  router->resolver_->Start();
  router->poller_ = std::thread([r = router.get()] { r->Poll(); });
  return router;
}

EndpointRouter::EndpointRouter(EndpointResolver::Target target,
                               std::shared_ptr<grpc::ChannelCredentials> credentials,
                               grpc::ChannelArguments args, InterceptorMaker make_inner,
                               const LoadBalancingSettings& settings, uint64_t seed,
                               Clock& clock)
    : credentials_(std::move(credentials)),
      args_(EndpointArgs(std::move(args), target, settings)),
      make_inner_(std::move(make_inner)),
      picker_options_(PickerOptions(settings, seed)),
      clock_(clock),
      connections_(std::make_shared<const Connections>()) {
  resolver_ = std::make_unique<EndpointResolver>(
      std::move(target), settings.routing->reresolve_interval,
      [this](const std::vector<std::string>& endpoints) { SetEndpoints(endpoints); }, clock);
}

EndpointRouter::~EndpointRouter() {
  resolver_.reset();  // no SetEndpoints() after this
  {
    MutexLock lock(&mu_);
    stop_ = true;
    wake_.SignalAll();
  }
  if (poller_.joinable()) poller_.join();
}

std::shared_ptr<const EndpointRouter::Connections> EndpointRouter::connections() {
  MutexLock lock(&mu_);
  return connections_;
}

void EndpointRouter::SetEndpoints(const std::vector<std::string>& endpoints) {
  std::shared_ptr<const Connections> before = connections();
  auto now = std::make_shared<Connections>();
  for (const std::string& name : endpoints) {
    auto it = before->find(name);
    if (it != before->end()) {
      now->emplace(name, it->second);
      continue;
    }
    auto connection = std::make_shared<Connection>();
    if (make_inner_) {
      connection->channel = grpc::experimental::CreateCustomChannelWithInterceptors(
          name, credentials_, args_, make_inner_());
    } else {
      connection->channel = grpc::CreateCustomChannel(name, credentials_, args_);
    }
    // Connect now, not at the first attempt.
    connection->state.store(connection->channel->GetState(/*try_to_connect=*/true),
                            std::memory_order_relaxed);
    now->emplace(name, std::move(connection));
  }
  {
    MutexLock lock(&mu_);
    connections_ = std::move(now);
    names_ = endpoints;
    // Under the lock, so that a picker PickerFor() makes meanwhile gets
    // the same set.
    for (const auto& [method, picker] : pickers_) picker->SetEndpoints(endpoints);
  }
}

std::shared_ptr<EndpointPicker> EndpointRouter::PickerFor(const std::string& method) {
  MutexLock lock(&mu_);
  std::shared_ptr<EndpointPicker>& picker = pickers_[method];
  if (picker == nullptr) {
    picker = std::make_shared<EndpointPicker>(picker_options_, clock_);
    if (!names_.empty()) picker->SetEndpoints(names_);
  }
  return picker;
}

std::vector<std::pair<std::string, std::shared_ptr<EndpointPicker>>> EndpointRouter::pickers() {
  MutexLock lock(&mu_);
  std::vector<std::pair<std::string, std::shared_ptr<EndpointPicker>>> all(pickers_.begin(),
                                                                          pickers_.end());
  std::sort(all.begin(), all.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return all;
}

std::vector<std::string> EndpointRouter::Endpoints() {
  MutexLock lock(&mu_);
  return names_;
}

void EndpointRouter::Poll() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (stop_) return;
      wake_.WaitWithTimeout(&mu_, kPollEvery);
      if (stop_) return;
    }
    bool failed = false;
    const auto all = pickers();
    for (const auto& [name, connection] : *connections()) {
      // try_to_connect: an idle connection (no traffic for a while, or one
      // gRPC dropped) reconnects before an attempt needs it.
      const grpc_connectivity_state state = connection->channel->GetState(true);
      connection->state.store(state, std::memory_order_relaxed);
      if (state == GRPC_CHANNEL_READY) {
        if (connection->lost) {
          // Back after a failure: a slow start (its first connection is
          // not one: SetEndpoints() gave a joining endpoint its own).
          connection->lost = false;
          for (const auto& [method, picker] : all) {
            picker->Rejoin(name);
            picker->Exclude(name, EndpointPicker::Out::kNo);
          }
        }
      } else if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
        failed = true;
        if (!connection->lost) {
          connection->lost = true;
          for (const auto& [method, picker] : all) {
            picker->Exclude(name, EndpointPicker::Out::kConnecting);
          }
        }
      }
    }
    if (failed && resolver_ != nullptr) resolver_->Refresh();
  }
}

EndpointRouter::Route EndpointRouter::Pick(
    EndpointPicker& picker, EndpointBreakers* breakers,
    absl::Span<const EndpointPicker::Endpoint* const> tried, bool retry) {
  using Gate = EndpointBreakers::Gate;
  Route route;
  const std::shared_ptr<const Connections> connections = this->connections();
  if (connections->empty()) return route;
  // The method's gates, asked once per endpoint and attempt. A first
  // attempt may be the probe an open endpoint's breaker waits for; a retry
  // never is (it goes where the call has the best chance).
  absl::InlinedVector<std::pair<const Connection*, Gate>, 4> gates;
  const std::string* probe = nullptr;
  std::vector<std::string> recovered;
  bool any_not_forced = false;
  for (const auto& [name, connection] : *connections) {
    Gate gate = breakers != nullptr ? breakers->Check(name, !retry && probe == nullptr)
                                    : Gate::kPass;
    if (gate == Gate::kProbe) probe = &name;
    if (gate == Gate::kRecovered) recovered.push_back(name);
    any_not_forced = any_not_forced || gate != Gate::kForcedOpen;
    gates.emplace_back(connection.get(), gate);
    const EndpointPicker::Out out = gate == Gate::kForcedOpen    ? EndpointPicker::Out::kForcedOpen
                                    : gate == Gate::kBreakerOpen ? EndpointPicker::Out::kBreakerOpen
                                                                 : EndpointPicker::Out::kNo;
    connection->gate_out.store(static_cast<int>(out), std::memory_order_relaxed);
  }
  for (const std::string& name : recovered) picker.Rejoin(name);
  const auto gate_of = [&](const Connection* c) {
    for (const auto& [connection, gate] : gates) {
      if (connection == c) return gate;
    }
    return Gate::kForcedOpen;
  };
  if (!any_not_forced) {
    route.all_forced_open = true;
    return route;
  }
  // Tier 0: ready and passing; 1: not failing to connect and passing; 2:
  // not forced open (every endpoint's breaker open: the method's breaker
  // decides, as without the router).
  for (int tier = 0; tier < 3 && route.endpoint == nullptr; ++tier) {
    route.endpoint = picker.Pick(
        [&](const EndpointPicker::Endpoint& e) {
          auto it = connections->find(e.name());
          if (it == connections->end()) return false;
          const Gate gate = gate_of(it->second.get());
          if (gate == Gate::kForcedOpen) return false;
          if (probe != nullptr) return e.name() == *probe;
          const bool passes = gate == Gate::kPass || gate == Gate::kRecovered;
          const int state = it->second->state.load(std::memory_order_relaxed);
          switch (tier) {
            case 0: return passes && state == GRPC_CHANNEL_READY;
            case 1: return passes && state != GRPC_CHANNEL_TRANSIENT_FAILURE;
            default: return true;
          }
        },
        tried, retry);
  }
  if (route.endpoint == nullptr) return route;
  route.picker = &picker;
  route.channel = connections->at(route.endpoint->name())->channel;
  return route;
}

void EndpointRouter::AppendStatus(const std::string& channel,
                                  std::vector<RoutedEndpointStatus>& rows) {
  const std::shared_ptr<const Connections> connections = this->connections();
  for (const auto& [method, picker] : pickers()) {
    // Methods that never picked (streams, methods not called yet) have no rows.
    const std::vector<EndpointPicker::EndpointStats> stats = picker->Snapshot();
    if (std::all_of(stats.begin(), stats.end(), [](const auto& e) { return e.picks == 0; })) {
      continue;
    }
    for (const EndpointPicker::EndpointStats& e : stats) {
      auto it = connections->find(e.name);
      rows.push_back(StatusRow(channel, method, e,
                               it != connections->end() ? it->second.get() : nullptr));
    }
  }
}

RoutedEndpointStatus EndpointRouter::StatusRow(const std::string& channel,
                                               const std::string& method,
                                               const EndpointPicker::EndpointStats& e,
                                               const Connection* connection) {
  RoutedEndpointStatus row;
  row.channel = channel;
  row.method = method;
  row.endpoint = e.name;
  row.picks = e.picks;
  row.retries_here = e.retries_here;
  row.in_flight = e.in_flight;
  row.latency = e.latency;
  row.error_share = e.error_share;
  row.load = e.load;
  row.weight = e.weight;
  // Why it is out: the picker's record (connectivity), else what the last
  // attempt's method found (breaker), else its connection now.
  row.out = OutName(e.out);
  if (connection != nullptr && row.out.empty()) {
    row.out = OutName(
        static_cast<EndpointPicker::Out>(connection->gate_out.load(std::memory_order_relaxed)));
    if (row.out.empty() && connection->channel->GetState(false) != GRPC_CHANNEL_READY) {
      row.out = OutName(EndpointPicker::Out::kConnecting);
    }
  }
  return row;
}

}  // namespace resilience
