#include "examples/cache_service/demo_session.h"

#include <cstdio>

#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "shipped_policies.h"
#include "src/client_interceptors/resilient_channel.h"
#include "grpc_resilience/events.h"
#include "src/grpc_common/status_conversion.h"

namespace cache_service {

std::string Show(const grpc::Status& status) { return resilience::FormatStatus(status); }

absl::StatusOr<resilience::PolicySet> ShippedPoliciesWith(
    const std::function<void(const std::string& method, resilience::v1::MethodConfig&)>& edit) {
  resilience::v1::PolicyFile file;
  if (auto s = google::protobuf::util::JsonStringToMessage(cache_service::kShippedPolicies, &file);
      !s.ok()) {
    return absl::InvalidArgumentError(s.ToString());
  }
  for (resilience::v1::MethodConfig& entry : *file.mutable_method_config()) {
    for (const resilience::v1::MethodName& name : entry.name()) edit(name.method(), entry);
  }
  std::string json;
  if (auto s = google::protobuf::util::MessageToJsonString(file, &json); !s.ok()) {
    return absl::InternalError(s.ToString());
  }
  return resilience::PolicySet::FromJsonString(json);
}

std::unique_ptr<CacheServer> StartServer(
    const std::function<void(const std::string&, resilience::v1::MethodConfig&)>& edit, int port) {
  absl::StatusOr<resilience::PolicySet> policies = ShippedPoliciesWith(edit);
  if (!policies.ok()) {
    std::fprintf(stderr, "cache_demo: policies.json: %s\n", policies.status().ToString().c_str());
    return nullptr;
  }
  cache_service::CacheServer::Options options;
  options.port = port;
  options.store.max_entries = 300;       // small, so that eviction shows
  options.store.max_value_bytes = 4096;  // small, so that the limit shows
  options.policies = *std::move(policies);
  options.events = std::make_shared<resilience::LogEvents>(stdout, "  event: ");
  absl::StatusOr<std::unique_ptr<cache_service::CacheServer>> server =
      cache_service::CacheServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "cache_demo: %s\n", server.status().ToString().c_str());
    return nullptr;
  }
  return *std::move(server);
}

std::shared_ptr<grpc::Channel> ResilientChannel(
    const std::string& target, std::shared_ptr<resilience::ClientResilience>* state) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 300);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  resilience::ResilientChannelOptions options;
  options.args = args;
  // Breaker transitions, one line each, as the demo goes.
  options.resilience.events = std::make_shared<resilience::LogEvents>(stdout, "  event: ");
  resilience::ResilientChannel channel = resilience::CreateResilientChannel(
      target, grpc::InsecureChannelCredentials(),
      *resilience::PolicySet::FromJsonString(cache_service::kShippedPolicies), std::move(options));
  *state = channel.resilience;
  return channel.channel;
}

void NoFaults(const std::string&, resilience::v1::MethodConfig&) {}

}  // namespace cache_service
