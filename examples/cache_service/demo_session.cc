#include "examples/cache_service/demo_session.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "examples/cache_service/status_text.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpc_resilience/events.h"
#include "grpc_resilience/resilient_channel.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "shipped_policies.h"

namespace cache_service {

std::string Show(const grpc::Status& status) { return FormatStatus(status); }

absl::StatusOr<resilience::PolicySet> ShippedPoliciesWith(const Faults& faults) {
  // The file as plain JSON (protobuf's Struct): an entry gets a
  // "faultInjection" member where `faults` names one.
  google::protobuf::Struct file;
  if (auto s = google::protobuf::util::JsonStringToMessage(kShippedPolicies, &file); !s.ok()) {
    return absl::InvalidArgumentError(s.ToString());
  }
  for (google::protobuf::Value& entry :
       *(*file.mutable_fields())["methodConfig"].mutable_list_value()->mutable_values()) {
    auto& fields = *entry.mutable_struct_value()->mutable_fields();
    for (const google::protobuf::Value& name : fields["name"].list_value().values()) {
      const auto method = name.struct_value().fields().find("method");
      const std::string fault = faults(
          method == name.struct_value().fields().end() ? "" : method->second.string_value());
      if (fault.empty()) continue;
      if (auto s = google::protobuf::util::JsonStringToMessage(fault, &fields["faultInjection"]);
          !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("faultInjection ", fault, ": ", s.ToString()));
      }
    }
  }
  std::string json;
  if (auto s = google::protobuf::util::MessageToJsonString(file, &json); !s.ok()) {
    return absl::InternalError(s.ToString());
  }
  return resilience::PolicySet::FromJsonString(json);
}

std::unique_ptr<CacheServer> StartServer(const Faults& faults, int port) {
  absl::StatusOr<resilience::PolicySet> policies = ShippedPoliciesWith(faults);
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

std::string NoFaults(const std::string&) { return ""; }

}  // namespace cache_service
