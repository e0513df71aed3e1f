#include "src/global_limits/fleet_limit_backend.h"

#include "absl/strings/str_cat.h"

namespace resilience {

std::string FleetLimitBackend::MissingMessage(absl::string_view path) {
  return absl::StrCat(
      path,
      ": this server has no store for fleet-wide rate limits, so the limit cannot be enforced "
      "and its scope rejects every call: link grpc_resilience::redis_limits and set "
      "ServerResilienceOptions::fleet_limits = resilience::RedisFleetLimits() "
      "(grpc_resilience/redis_limits.h) before AddServerInterceptors()");
}

std::vector<std::string> FleetLimitBackend::MissingMessages(const ThrottleSettings& throttle) {
  std::vector<std::string> messages;
  if (throttle.global) messages.push_back(MissingMessage(throttle.global->path));
  if (throttle.per_caller && throttle.per_caller->global) {
    messages.push_back(MissingMessage(throttle.per_caller->global->path));
  }
  return messages;
}

}  // namespace resilience
