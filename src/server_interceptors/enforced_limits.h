// File: src/server_interceptors/enforced_limits.h
//
// The throttle's limits asked under their enforcement modes (no gRPC here:
// the replay tests drive it on a simulated clock). docs/shadow-mode-server.md.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_ENFORCED_LIMITS_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_ENFORCED_LIMITS_H_

#include "absl/time/time.h"
#include "grpc_resilience/criticality_level.h"
#include "grpc_resilience/enforcement_mode.h"
#include "src/server_interceptors/scope_enforcement.h"
#include "src/server_interceptors/server_method_state.h"

namespace resilience {

// What one limit did with a call.
struct LimitDecision {
  enum class Kind {
    kTaken,     // admitted: a slot or a token taken
    kSkipped,   // the limit is off for this call: not asked, nothing taken
    kRefused,   // rejected, for real
    kShadowed,  // would have been rejected: let through, nothing taken
  };
  Kind kind = Kind::kTaken;
  // kRefused, kShadowed: whose refusal it is. A refusal only because of the
  // call's share is criticalityShares' when the shares are in shadow, else
  // the limit's own (as an enforced share's refusal always was).
  EnforcedPolicy by = EnforcedPolicy::kThrottle;
  // A rate refusal: how long until the next token.
  absl::Duration retry_after = absl::ZeroDuration();
};

// EnforcedLimits
//
// Each limit of a scope asked for one call of `level` under `modes`:
//   - enforce: as without modes (the shares included);
//   - shadow: the same decision; a refusal becomes kShadowed and the limit
//     keeps its state as if it had refused (no slot, no token taken);
//   - off: kSkipped, the limit not asked.
// criticalityShares in shadow: each limit is asked at the call's share; a
// refusal the whole limit would not have made (the concurrency limit's slots
// not all taken, the bucket holding a token) is the shares' kShadowed, and
// the call takes nothing from the limit. perCaller and global ask their
// limiters at the whole share while the shares are not enforced (their
// share refusals are not counted in shadow). Off: every limit at the whole
// share.
class EnforcedLimits {
 public:
  // A slot of limits.concurrency (not null) under modes.throttle, the call
  // judged by `shares` (the scope's, or its retry shares for a retried
  // attempt under throttle.retryShedding).
  static LimitDecision Slot(ScopeLimits& limits, const CriticalityShares& shares,
                            const EnforcementModes& modes, Criticality level);
  // A token of limits.rate (not null) under modes.throttle.
  static LimitDecision Token(ScopeLimits& limits, const CriticalityShares& shares,
                             const EnforcementModes& modes, Criticality level);
  // A token of limits.global (not null) under modes.global.
  static LimitDecision Global(ScopeLimits& limits, const CriticalityShares& shares,
                              const EnforcementModes& modes, Criticality level);
  // The same with the scope's own shares (a first attempt).
  static LimitDecision Slot(ScopeLimits& limits, const EnforcementModes& modes,
                            Criticality level) {
    return Slot(limits, limits.shares, modes, level);
  }
  static LimitDecision Token(ScopeLimits& limits, const EnforcementModes& modes,
                             Criticality level) {
    return Token(limits, limits.shares, modes, level);
  }
  static LimitDecision Global(ScopeLimits& limits, const EnforcementModes& modes,
                              Criticality level) {
    return Global(limits, limits.shares, modes, level);
  }
  // The shares the per-caller and fleet-wide limits judge with: `shares`
  // when the scope's shares are enforced, the whole limit for every level
  // otherwise.
  static const CriticalityShares& Shares(const CriticalityShares& shares,
                                         const EnforcementModes& modes);
  static const CriticalityShares& Shares(const ScopeLimits& limits,
                                         const EnforcementModes& modes) {
    return Shares(limits.shares, modes);
  }
  // A refusal by `by` under `mode`: kRefused (enforce) or kShadowed.
  static LimitDecision Refusal(EnforcedPolicy by, EnforcementMode mode,
                               absl::Duration retry_after = absl::ZeroDuration());
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_ENFORCED_LIMITS_H_
