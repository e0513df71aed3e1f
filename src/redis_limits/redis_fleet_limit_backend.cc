// RedisFleetLimitBackend, and RedisFleetLimits() of the public
// grpc_resilience/redis_limits.h.

#include "src/redis_limits/redis_fleet_limit_backend.h"

#include <utility>

#include "grpc_resilience/redis_limits.h"
#include "src/redis_limits/redis_lease_client.h"
#include "src/redis_limits/redis_lease_queue_worker.h"
#include "src/redis_limits/redis_lease_source.h"

namespace resilience {

std::unique_ptr<LeaseSource> RedisFleetLimitBackend::StartLeaseSource(
    const GlobalThrottleSettings& settings, const std::string& key,
    GlobalRateLimiter& limiter) const {
  RedisLeaseSource::Options source;
  source.redis = RedisLeaseClient::FromSettings(settings);
  source.key = key;
  return std::make_unique<RedisLeaseSource>(std::move(source), limiter);
}

std::unique_ptr<LeaseQueue::Worker> RedisFleetLimitBackend::ServeLeaseQueue(
    const GlobalThrottleSettings& settings, LeaseQueue& queue) const {
  return std::make_unique<RedisLeaseQueueWorker>(RedisLeaseClient::FromSettings(settings), queue);
}

std::shared_ptr<const FleetLimitBackend> RedisFleetLimits() {
  return std::make_shared<const RedisFleetLimitBackend>();
}

}  // namespace resilience
