#include "src/policy/method_policy.h"

#include "src/limits/fixed_concurrency_limiter.h"

namespace resilience {

Outcome BreakerSettings::Classify(absl::StatusCode code, LocalEnd end, bool pushback) const {
  switch (end) {
    case LocalEnd::kCancelledByCaller:
    case LocalEnd::kDeadlineBeforeStart:
      return Outcome::kNeutral;
    case LocalEnd::kCallDeadline:
      if (caller_deadline == CallerDeadline::kNeutral) return Outcome::kNeutral;
      return classifier.Classify(absl::StatusCode::kDeadlineExceeded);
    case LocalEnd::kPerAttemptTimeout:
      return classifier.Classify(absl::StatusCode::kDeadlineExceeded);
    case LocalEnd::kNone:
      break;
  }
  const Outcome outcome = classifier.Classify(code);
  if (pushback && outcome == Outcome::kFailure && kind == BreakerKind::kThreeState) {
    return Outcome::kNeutral;
  }
  return outcome;
}

std::unique_ptr<Breaker> CreateBreaker(const BreakerSettings& settings, Clock& clock,
                                       uint64_t seed) {
  switch (settings.kind) {
    case BreakerKind::kSre: {
      SreBreaker::Options o = settings.sre;
      o.seed = seed;
      return *SreBreaker::Create(o, clock);
    }
    case BreakerKind::kThreeState: {
      ThreeStateBreaker::Options o = settings.three_state;
      o.health_gated = settings.recovery_probe.has_value();
      return *ThreeStateBreaker::Create(o, clock);
    }
    case BreakerKind::kNone:
      break;
  }
  return nullptr;
}

std::unique_ptr<ConcurrencyLimiter> CreateConcurrencyLimiter(const ThrottleSettings& settings,
                                                             Clock& clock) {
  if (settings.adaptive.has_value()) {
    if (settings.adaptive->algorithm == AdaptiveLimitSettings::Algorithm::kAimd) {
      return *AimdConcurrencyLimiter::Create(settings.adaptive->aimd, clock);
    }
    return *GradientConcurrencyLimiter::Create(settings.adaptive->gradient, clock);
  }
  if (settings.max_concurrency > 0) {
    return std::make_unique<FixedConcurrencyLimiter>(settings.max_concurrency);
  }
  return nullptr;
}

}  // namespace resilience
