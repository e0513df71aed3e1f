#include "src/global_limits/global_rate_limit.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/policy/global_throttle_policy.h"

namespace resilience {

absl::StatusOr<std::unique_ptr<GlobalRateLimit>> GlobalRateLimit::Create(
    const GlobalThrottleSettings& settings, absl::string_view scope, Clock& clock,
    const FleetLimitBackend& backend) {
  std::string key = settings.key.empty() ? DefaultGlobalThrottleKey(scope) : settings.key;
  GlobalRateLimiter::Options options = LimiterOptions(settings);
  options.name = absl::StrCat("'", key, "' at ", settings.host, ":", settings.port,
                              settings.path.empty() ? "" : absl::StrCat(" (", settings.path, ")"));
  options.log = [](const std::string& line) {
    const std::string out = absl::StrCat("grpc_resilience: ", line, "\n");
    std::fwrite(out.data(), 1, out.size(), stderr);  // one write: lines do not interleave
  };
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
