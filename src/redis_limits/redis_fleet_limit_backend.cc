// RedisFleetLimitBackend, and RedisFleetLimits() of the public
// grpc_resilience/redis_limits.h.

#include "src/redis_limits/redis_fleet_limit_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"

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
  const std::string login =
      absl::StrCat(settings.host, ":", settings.port, "\n", settings.username, "\n",
                   settings.password_env, "\n", settings.password_file, "\n",
                   absl::ToInt64Nanoseconds(settings.timeout));
  std::shared_ptr<RedisLeaseQueueWorker> worker;
  {
    MutexLock lock(&mu_);
    std::weak_ptr<RedisLeaseQueueWorker>& kept = workers_[login];
    worker = kept.lock();
    if (worker == nullptr) {
      worker = std::make_shared<RedisLeaseQueueWorker>(RedisLeaseClient::FromSettings(settings));
      kept = worker;
    }
    // Logins no queue uses any more go.
    absl::erase_if(workers_, [](const auto& entry) { return entry.second.expired(); });
  }
  return RedisLeaseQueueWorker::Serve(std::move(worker), queue);
}

std::shared_ptr<const FleetLimitBackend> RedisFleetLimits() {
  return std::make_shared<const RedisFleetLimitBackend>();
}

}  // namespace resilience
