// File: src/redis_limits/redis_fleet_limit_backend.h
//
// The Redis store of fleet-wide rate limits: a FleetLimitBackend whose lease
// sources are RedisLeaseSources (hiredis). Public route:
// RedisFleetLimits() (grpc_resilience/redis_limits.h).

#ifndef GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_FLEET_LIMIT_BACKEND_H_
#define GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_FLEET_LIMIT_BACKEND_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "src/core/mutex.h"
#include "src/redis_limits/redis_lease_queue_worker.h"

#include "src/global_limits/fleet_limit_backend.h"

namespace resilience {

// RedisFleetLimitBackend
//
// Each source connects to the settings' `redis` (host:port), authenticates
// with their AUTH settings (the password read again at each connect) and
// leases from `key`; see RedisLeaseSource. The keys of every
// throttle.perCaller.global on one Redis (address, user, password source
// and timeout) share one RedisLeaseQueueWorker, kept while a queue uses it.
// Thread-safe.
class RedisFleetLimitBackend final : public FleetLimitBackend {
 public:
  std::unique_ptr<LeaseSource> StartLeaseSource(const GlobalThrottleSettings& settings,
                                                const std::string& key,
                                                GlobalRateLimiter& limiter) const override;
  std::unique_ptr<LeaseQueue::Worker> ServeLeaseQueue(const GlobalThrottleSettings& settings,
                                                      LeaseQueue& queue) const override;

 private:
  mutable Mutex mu_;
  // Per Redis and login: the worker while a queue holds it.
  mutable absl::flat_hash_map<std::string, std::weak_ptr<RedisLeaseQueueWorker>> workers_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_REDIS_LIMITS_REDIS_FLEET_LIMIT_BACKEND_H_
