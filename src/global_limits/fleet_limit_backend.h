// File: src/global_limits/fleet_limit_backend.h
//
// Where a server's fleet-wide rate limits (throttle.global) lease their
// tokens: the store the fleet shares, behind an interface the server links
// without the store's client library.

#ifndef GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_FLEET_LIMIT_BACKEND_H_
#define GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_FLEET_LIMIT_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/lease_queue.h"
#include "src/limits/lease_source.h"
#include "src/policy/global_throttle_settings.h"
#include "src/policy/method_policy.h"

namespace resilience {

// FleetLimitBackend
//
// Makes the LeaseSource of one fleet-wide limit. The server holds one
// (ServerResilienceOptions::fleet_limits, set by the optional library that
// implements it: RedisFleetLimits() of grpc_resilience::redis_limits) and
// asks it once per scope whose policy has a throttle.global. Without one, such
// a scope cannot be enforced: the server warns at start and the scope
// rejects every call, saying why (MissingMessage()).
// Implementations are thread-safe.
class FleetLimitBackend {
 public:
  virtual ~FleetLimitBackend() = default;

  // StartLeaseSource()
  //
  // A source that leases `limiter`'s tokens from the bucket `key` of the
  // store `settings` names, already running (it must not wait for the store:
  // until its first lease the limiter admits its local share). `limiter`
  // must outlive it; the caller attaches it to the limiter.
  virtual std::unique_ptr<LeaseSource> StartLeaseSource(const GlobalThrottleSettings& settings,
                                                        const std::string& key,
                                                        GlobalRateLimiter& limiter) const = 0;

  // ServeLeaseQueue()
  //
  // The worker that serves every key of a throttle.perCaller.global limit
  // (`queue`: PerCallerLimits::fleet_queue()) from the store `settings`
  // names, already running, with threads and connections that do not grow
  // with the keys (Redis's: one per Redis, shared by the queues on it); it
  // must not wait for the store (until its first lease a key admits its
  // local share). The caller hands it to the queue (LeaseQueue::SetWorker()),
  // which must outlive it.
  virtual std::unique_ptr<LeaseQueue::Worker> ServeLeaseQueue(
      const GlobalThrottleSettings& settings, LeaseQueue& queue) const = 0;

  // MissingMessage()
  //
  // What a server without a backend says of the throttle.global at `path`
  // ("methodConfig[2].throttle.global"): which library to link and what to
  // call.
  static std::string MissingMessage(absl::string_view path);

  // MissingMessages()
  //
  // MissingMessage() for each fleet-wide limit of `throttle` (global,
  // perCaller.global): what a server without a backend warns of.
  static std::vector<std::string> MissingMessages(const ThrottleSettings& throttle);
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_FLEET_LIMIT_BACKEND_H_
