#include "src/global_limits/global_rate_limit.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/policy/global_throttle_policy.h"

namespace resilience {

GlobalRateLimiter::Options LoggedLimiterOptions(const GlobalThrottleSettings& settings,
                                                absl::string_view what) {
  GlobalRateLimiter::Options options = LimiterOptions(settings);
  options.name = absl::StrCat(what, what.empty() ? "" : " ", "at ", settings.host, ":",
                              settings.port,
                              settings.path.empty() ? "" : absl::StrCat(" (", settings.path, ")"));
  options.log = [](const std::string& line) {
    const std::string out = absl::StrCat("grpc_resilience: ", line, "\n");
    std::fwrite(out.data(), 1, out.size(), stderr);  // one write: lines do not interleave
  };
  return options;
}

absl::StatusOr<std::unique_ptr<PerCallerLimits>> PerCallerFleetLimits(
    const PerCallerSettings& settings, absl::string_view scope, Clock& clock,
    const FleetLimitBackend& backend) {
  const GlobalThrottleSettings& global = *settings.global;
  PerCallerLimits::Options options = settings.limits;
  options.fleet = LoggedLimiterOptions(global, "");
  options.fleet_prefix = PerCallerFleetPrefix(global, scope);
  absl::StatusOr<std::unique_ptr<PerCallerLimits>> limits = PerCallerLimits::Create(options, clock);
  if (!limits.ok()) return limits.status();
  LeaseQueue& queue = *(*limits)->fleet_queue();
  queue.SetWorker(backend.ServeLeaseQueue(global, queue));
  return limits;
}

absl::StatusOr<std::unique_ptr<GlobalRateLimit>> GlobalRateLimit::Create(
    const GlobalThrottleSettings& settings, absl::string_view scope, Clock& clock,
    const FleetLimitBackend& backend) {
  std::string key = settings.key.empty() ? DefaultGlobalThrottleKey(scope) : settings.key;
  GlobalRateLimiter::Options options = LoggedLimiterOptions(settings, absl::StrCat("'", key, "'"));
  absl::StatusOr<std::unique_ptr<GlobalRateLimiter>> limiter =
      GlobalRateLimiter::Create(std::move(options), clock);
  if (!limiter.ok()) return limiter.status();
  std::unique_ptr<GlobalRateLimit> limit(new GlobalRateLimit(key, *std::move(limiter)));
  limit->source_ = backend.StartLeaseSource(settings, key, *limit->limiter_);
  limit->limiter_->Attach(limit->source_.get());
  return limit;
}

GlobalRateLimit::GlobalRateLimit(std::string key, std::unique_ptr<GlobalRateLimiter> limiter)
    : key_(std::move(key)), limiter_(std::move(limiter)) {}

GlobalRateLimit::~GlobalRateLimit() {
  limiter_->Attach(nullptr);
  source_.reset();
}

}  // namespace resilience
