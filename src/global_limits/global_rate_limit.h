// File: src/global_limits/global_rate_limit.h
//
// The fleet's rate limit of one server scope: a GlobalRateLimiter and the
// LeaseSource that feeds it (a FleetLimitBackend's: Redis's, in
// src/redis_limits), made from a throttle.global policy.

#ifndef GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_RATE_LIMIT_H_
#define GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_RATE_LIMIT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/global_limits/fleet_limit_backend.h"
#include "src/limits/global_rate_limiter.h"
#include "src/limits/per_caller_limits.h"
#include "src/policy/global_throttle_settings.h"
#include "src/policy/per_caller_settings.h"

namespace resilience {

// GlobalRateLimit
//
// Create() never blocks on the store (Redis): the source's thread connects in
// the background, and until it has a lease the scope admits its local share.
// Transitions are logged to stderr, one line each. Destroying it stops the
// client's thread; destroy it only once no call is in TryAcquire() (the
// server's limits go with its ServerResilienceImpl, after the server stopped).
// This class is thread-safe.
class GlobalRateLimit {
 public:
  // For `scope` (its key when the settings name none), on `clock`, fed by a
  // source of `backend`'s.
  static absl::StatusOr<std::unique_ptr<GlobalRateLimit>> Create(
      const GlobalThrottleSettings& settings, absl::string_view scope, Clock& clock,
      const FleetLimitBackend& backend);
  ~GlobalRateLimit();

  bool TryAcquire(absl::Duration* retry_after) { return limiter_->TryAcquire(retry_after); }

  GlobalRateLimiter& limiter() { return *limiter_; }
  const std::string& key() const { return key_; }

 private:
  GlobalRateLimit(std::string key, std::unique_ptr<GlobalRateLimiter> limiter);

  const std::string key_;
  std::unique_ptr<GlobalRateLimiter> limiter_;
  std::unique_ptr<LeaseSource> source_;  // destroyed first
};

// LoggedLimiterOptions()
//
// LimiterOptions(settings) logging to stderr (one line per transition), the
// limit named `what` (e.g. "'key'") and where its store is:
// "'key' at 127.0.0.1:6379 (methodConfig[0].throttle.global)".
GlobalRateLimiter::Options LoggedLimiterOptions(const GlobalThrottleSettings& settings,
                                                absl::string_view what);

// PerCallerFleetLimits()
//
// The PerCallerLimits of a throttle.perCaller with `global`
// (settings.global set) in `scope`: each key's fleet bucket named
// PerCallerFleetPrefix() ':' the key, all served by a worker of
// `backend`'s (FleetLimitBackend::ServeLeaseQueue(): Redis's serves every
// queue on one Redis), already running and never waited for. Outages and recoveries are logged to stderr, one line
// each for all the keys.
absl::StatusOr<std::unique_ptr<PerCallerLimits>> PerCallerFleetLimits(
    const PerCallerSettings& settings, absl::string_view scope, Clock& clock,
    const FleetLimitBackend& backend);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_GLOBAL_LIMITS_GLOBAL_RATE_LIMIT_H_
