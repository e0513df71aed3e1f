// File: src/grpc_common/criticality.cc
//
// The public criticality.h: the resilience-criticality header on gRPC calls.

#include "grpc_resilience/criticality.h"

#include <map>
#include <string>

#include "src/grpc_common/metadata_keys.h"

namespace resilience {

void SetCriticality(grpc::ClientContext& context, Criticality level) {
  context.AddMetadata(kCriticalityKey, std::string(CriticalityName(level)));
}

std::optional<Criticality> CriticalityOf(const grpc::ServerContextBase& server_context) {
  const std::multimap<grpc::string_ref, grpc::string_ref>& received =
      server_context.client_metadata();
  const auto header = received.find(kCriticalityKey);
  if (header == received.end()) return std::nullopt;
  return ParseCriticality(absl::string_view(header->second.data(), header->second.size()));
}

bool PropagateCriticality(const grpc::ServerContextBase& from, grpc::ClientContext& to) {
  const std::optional<Criticality> level = CriticalityOf(from);
  if (!level.has_value()) return false;
  SetCriticality(to, *level);
  return true;
}

}  // namespace resilience
