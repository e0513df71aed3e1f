// RedisFleetLimitBackend, and RedisFleetLimits() of the public
// grpc_resilience/redis_limits.h.

#include "src/redis_limits/redis_fleet_limit_backend.h"

#include <utility>

#include "grpc_resilience/redis_limits.h"
#include "src/policy/global_throttle_policy.h"
#include "src/redis_limits/redis_lease_source.h"

namespace resilience {

std::unique_ptr<LeaseSource> RedisFleetLimitBackend::StartLeaseSource(
    const GlobalThrottleSettings& settings, const std::string& key,
    GlobalRateLimiter& limiter) const {
  RedisLeaseSource::Options source;
  source.host = settings.host;
  source.port = settings.port;
  source.key = key;
  source.timeout = settings.timeout;
  if (!settings.password_env.empty() || !settings.password_file.empty()) {
    source.username = settings.username;
    source.password = [settings] { return ReadGlobalThrottlePassword(settings); };
    source.credentials = GlobalThrottlePasswordSource(settings);
  }
  return std::make_unique<RedisLeaseSource>(std::move(source), limiter);
}

std::shared_ptr<const FleetLimitBackend> RedisFleetLimits() {
  return std::make_shared<const RedisFleetLimitBackend>();
}

}  // namespace resilience
