// ThrottleStage in shadow mode: a policy that would have rejected the
// call counts and logs it and lets it through (throttle_stage.h,
// docs/shadow-mode-server.md).

#include "src/server_interceptors/throttle_stage.h"

namespace resilience {

absl::string_view ThrottleStage::CallerCause(PerCallerLimits::Verdict verdict) {
  switch (verdict) {
    case PerCallerLimits::Verdict::kRate:
      return "rate";
    case PerCallerLimits::Verdict::kFleetRate:
      return "global_rate";
    default:
      return "concurrency";
  }
}

void ThrottleStage::Shadow(const LimitDecision& decision, absl::string_view cause) {
  if (decision.kind != LimitDecision::Kind::kShadowed) return;
  Shadowed(decision.by, EnforcementMode::kShadow, cause);
}

bool ThrottleStage::Shadowed(EnforcedPolicy policy, EnforcementMode mode,
                                   absl::string_view cause) {
  if (mode != EnforcementMode::kShadow) return false;
  std::atomic<int64_t>* counter = &state_->shadow_throttle;
  switch (policy) {
    case EnforcedPolicy::kCriticalityShares:
      counter = &state_->shadow_shares;
      break;
    case EnforcedPolicy::kCpu:
      counter = &state_->shadow_cpu;
      break;
    case EnforcedPolicy::kPerCaller:
      counter = &state_->shadow_per_caller;
      break;
    case EnforcedPolicy::kGlobal:
      counter = &state_->shadow_global;
      break;
    default:
      break;
  }
  counter->fetch_add(1, std::memory_order_relaxed);
  ScopeLimits& limits = *state_->limits;
  limits.shadow_log.Note(start_, info_->method(), policy, cause);
  // What the rejection would have given back, in the policies that do not
  // enforce (an enforcing one keeps what the call, which runs, holds).
  if (holds_slot_ && modes_.throttle != EnforcementMode::kEnforce) {
    limits.concurrency->ReleaseUnused();
    holds_slot_ = false;
  }
  if (modes_.per_caller != EnforcementMode::kEnforce) caller_slot_.Release();
  modes_.AfterShadowRefusal();
  return true;
}

}  // namespace resilience
