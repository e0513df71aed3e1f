#include "src/server_interceptors/enforced_limits.h"

namespace resilience {
namespace {

using Kind = LimitDecision::Kind;

const CriticalityShares& Whole() {
  static const CriticalityShares* const whole = new CriticalityShares({1.0, 1.0, 1.0, 1.0});
  return *whole;
}

// A refusal of the throttle's own limit that happened only because of the
// call's share (`share_only`): the shares' in shadow, else the limit's.
LimitDecision ThrottleRefusal(const EnforcementModes& modes, bool share_only,
                              absl::Duration retry_after) {
  if (share_only && modes.shares == EnforcementMode::kShadow) {
    return EnforcedLimits::Refusal(EnforcedPolicy::kCriticalityShares, EnforcementMode::kShadow,
                                   retry_after);
  }
  return EnforcedLimits::Refusal(EnforcedPolicy::kThrottle, modes.throttle, retry_after);
}

}  // namespace

LimitDecision EnforcedLimits::Refusal(EnforcedPolicy by, EnforcementMode mode,
                                      absl::Duration retry_after) {
  LimitDecision d;
  d.kind = mode == EnforcementMode::kEnforce ? Kind::kRefused : Kind::kShadowed;
  d.by = by;
  d.retry_after = retry_after;
  return d;
}

const CriticalityShares& EnforcedLimits::Shares(const CriticalityShares& shares,
                                                const EnforcementModes& modes) {
  return modes.shares == EnforcementMode::kEnforce ? shares : Whole();
}

LimitDecision EnforcedLimits::Slot(ScopeLimits& limits, const CriticalityShares& shares,
                                   const EnforcementModes& modes, Criticality level) {
  if (modes.throttle == EnforcementMode::kOff) return {Kind::kSkipped};
  ConcurrencyLimiter& limiter = *limits.concurrency;
  if (modes.shares != EnforcementMode::kOff && shares.share(level) < 1.0) {
    // CriticalityShares::TryAcquire(), with whose refusal it is.
    const int64_t limit = limiter.limit();
    const int64_t in_flight = limiter.in_flight();
    if (in_flight >= shares.ConcurrencyCap(limit, level)) {
      return ThrottleRefusal(modes, /*share_only=*/in_flight < limit, absl::ZeroDuration());
    }
  }
  if (limiter.TryAcquire()) return {Kind::kTaken};
  return ThrottleRefusal(modes, /*share_only=*/false, absl::ZeroDuration());
}

LimitDecision EnforcedLimits::Token(ScopeLimits& limits, const CriticalityShares& shares,
                                    const EnforcementModes& modes, Criticality level) {
  if (modes.throttle == EnforcementMode::kOff) return {Kind::kSkipped};
  const bool shared = modes.shares != EnforcementMode::kOff;
  absl::Duration retry_after;
  if (limits.rate->TryAcquire(shared ? shares : Whole(), level, &retry_after)) {
    return {Kind::kTaken};
  }
  // In shadow, whether the whole bucket would have given the token.
  const bool share_only = modes.shares == EnforcementMode::kShadow &&
                          shares.share(level) < 1.0 && limits.rate->HasToken();
  return ThrottleRefusal(modes, share_only, retry_after);
}

LimitDecision EnforcedLimits::Global(ScopeLimits& limits, const CriticalityShares& shares,
                                     const EnforcementModes& modes, Criticality level) {
  if (modes.global == EnforcementMode::kOff) return {Kind::kSkipped};
  absl::Duration retry_after;
  if (limits.global->limiter().TryAcquire(Shares(shares, modes), level, &retry_after)) {
    return {Kind::kTaken};
  }
  return Refusal(EnforcedPolicy::kGlobal, modes.global, retry_after);
}

}  // namespace resilience
