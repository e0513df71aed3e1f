#include "src/global_limits/global_rate_limit.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "src/policy/global_throttle_policy.h"

namespace resilience {

absl::StatusOr<std::unique_ptr<GlobalRateLimit>> GlobalRateLimit::Create(
    const GlobalThrottleSettings& settings, absl::string_view scope, Clock& clock) {
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
  return std::unique_ptr<GlobalRateLimit>(
      new GlobalRateLimit(std::move(key), *std::move(limiter), std::move(source)));
}

GlobalRateLimit::GlobalRateLimit(std::string key, std::unique_ptr<GlobalRateLimiter> limiter,
                                 RedisLeaseSource::Options source)
    : key_(std::move(key)), limiter_(std::move(limiter)) {
  source_ = std::make_unique<RedisLeaseSource>(std::move(source), *limiter_);
  limiter_->Attach(source_.get());
}

GlobalRateLimit::~GlobalRateLimit() {
  limiter_->Attach(nullptr);
  source_.reset();
}

}  // namespace resilience
