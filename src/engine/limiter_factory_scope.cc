// LimiterFactory::ForScope() and its parts (limiter_factory.h): a scope's
// limiters, fleet-wide ones included. In grpc_resilience::engine_scopes,
// which links src/global_limits; a client links none of it.

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "src/engine/limiter_factory.h"
#include "src/global_limits/fleet_limit_backend.h"
#include "src/global_limits/global_rate_limit.h"

namespace resilience {

ScopeLimiters LimiterFactory::ForScope(absl::string_view scope, const ThrottleSettings& settings,
                                       const ScopeLimiters* previous) const {
  ScopeLimiters made;
  made.adaptive = settings.adaptive.has_value();
  MakeConcurrency(settings, previous, made);
  MakeRate(settings, previous, made);
  if (settings.per_caller && made.unusable.empty()) {
    MakePerCaller(scope, *settings.per_caller, previous, made);
  }
  if (settings.global && made.unusable.empty()) MakeGlobal(scope, *settings.global, made);
  return made;
}

void LimiterFactory::MakeConcurrency(const ThrottleSettings& settings,
                                     const ScopeLimiters* previous, ScopeLimiters& made) const {
  // A fixed limit that stays fixed keeps its limiter, resized: the calls in
  // flight hold their slots in it and release them there.
  if (previous != nullptr && previous->concurrency != nullptr && !previous->adaptive &&
      !made.adaptive && settings.max_concurrency > 0 &&
      previous->concurrency->Resize(settings.max_concurrency)) {
    made.concurrency = previous->concurrency;
  } else {
    made.concurrency = CreateConcurrencyLimiter(settings, clock_);
  }
}

void LimiterFactory::MakeRate(const ThrottleSettings& settings, const ScopeLimiters* previous,
                              ScopeLimiters& made) const {
  if (settings.rate_per_second <= 0) return;
  if (previous != nullptr && previous->rate != nullptr &&
      previous->rate->rate_per_second() == settings.rate_per_second &&
      previous->rate->burst() == settings.burst) {
    made.rate = previous->rate;  // the same rate keeps its tokens
    return;
  }
  // The policy loader checks rate and burst with the bucket's own rules, so
  // this cannot fail for a loaded policy; if it did, the scope would admit
  // nothing and say why rather than crash or admit everything.
  absl::StatusOr<std::unique_ptr<TokenBucket>> bucket =
      TokenBucket::Create(settings.rate_per_second, settings.burst, clock_);
  if (bucket.ok()) {
    made.rate = *std::move(bucket);
  } else {
    made.unusable = std::string(bucket.status().message());
  }
}

void LimiterFactory::MakePerCaller(absl::string_view scope, const PerCallerSettings& settings,
                                   const ScopeLimiters* previous, ScopeLimiters& made) const {
  made.caller_header = settings.header;
  const PerCallerLimits::Options& o = settings.limits;
  const PerCallerLimits* kept = previous != nullptr ? previous->per_caller.get() : nullptr;
  // A fleet-wide limit per key is made anew with any change of the
  // throttle (its keys start again at their local share).
  if (kept != nullptr && previous->caller_header == made.caller_header && !o.fleet &&
      !kept->options().fleet && kept->options().max_concurrency == o.max_concurrency &&
      kept->options().rate_per_second == o.rate_per_second && kept->options().burst == o.burst &&
      kept->options().max_keys == o.max_keys) {
    made.per_caller = previous->per_caller;  // the same keys, slots and tokens
    return;
  }
  if (settings.global && fleet_ == nullptr) {
    made.unusable = FleetLimitBackend::MissingMessage(settings.global->path);
    return;
  }
  absl::StatusOr<std::unique_ptr<PerCallerLimits>> per_caller =
      settings.global ? PerCallerFleetLimits(settings, scope, clock_, *fleet_)
                      // As the bucket: cannot fail for a loaded policy.
                      : PerCallerLimits::Create(o, clock_);
  if (per_caller.ok()) {
    made.per_caller = *std::move(per_caller);
  } else {
    made.unusable = std::string(per_caller.status().message());
  }
}

void LimiterFactory::MakeGlobal(absl::string_view scope, const GlobalThrottleSettings& settings,
                                ScopeLimiters& made) const {
  if (fleet_ == nullptr) {
    // A limit that cannot be enforced admits nothing and says why, as an
    // unusable bucket does (AddServerInterceptors() warned at start).
    made.unusable = FleetLimitBackend::MissingMessage(settings.path);
    return;
  }
  // Starts the store client's thread; never waits on the store.
  absl::StatusOr<std::unique_ptr<GlobalRateLimit>> global =
      GlobalRateLimit::Create(settings, scope, clock_, *fleet_);
  if (global.ok()) {
    made.global = *std::move(global);
  } else {
    made.unusable = std::string(global.status().message());
  }
}

}  // namespace resilience
