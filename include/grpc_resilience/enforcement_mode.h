/// \file include/grpc_resilience/enforcement_mode.h
///
/// Whether an enforcing policy (a breaker, a bulkhead, a throttle's limits,
/// per-caller limits, the CPU gate, a fleet-wide limit, criticality shares)
/// rejects calls, only says it would have, or is off: its `enforcement` in the
/// policy file, switched at runtime through Update() or the admin endpoint
/// (docs/shadow-mode.md).

#ifndef GRPC_RESILIENCE_ENFORCEMENT_MODE_H_
#define GRPC_RESILIENCE_ENFORCEMENT_MODE_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "grpc_resilience/export.h"

namespace resilience {

/// What a policy does with a call it decides to reject.
enum class EnforcementMode {
  kEnforce,  ///< rejects it (the default)
  kShadow,   ///< lets it through, counts and logs "would have rejected", and
             ///< keeps its own state as if it had rejected it
  kOff,      ///< decides nothing and keeps no state
};

/// The policies whose enforcement can be set, by the name of their block in
/// the policy file.
enum class EnforcedPolicy {
  kBreaker,             ///< `breaker` (client): the method's and its endpoints' breakers
  kBulkhead,            ///< `bulkhead` (client)
  kThrottle,            ///< `throttle` (server): maxConcurrency, adaptive, ratePerSecond
  kPerCaller,           ///< `throttle.perCaller` (server)
  kCpu,                 ///< `throttle.cpu` (server)
  kGlobal,              ///< `throttle.global` (server)
  kCriticalityShares,   ///< `throttle.criticalityShares` (server)
};

/// EnforcementModeName()
///
/// The mode's name in the policy file and on the admin endpoint: "enforce",
/// "shadow", "off".
GRPC_RESILIENCE_EXPORT absl::string_view EnforcementModeName(EnforcementMode mode);

/// ParseEnforcementMode()
///
/// The mode named exactly `name` (lower case); nullopt for anything else.
GRPC_RESILIENCE_EXPORT std::optional<EnforcementMode> ParseEnforcementMode(absl::string_view name);

/// EnforcedPolicyName()
///
/// The policy's name as the policy file's path writes it: "breaker",
/// "bulkhead", "throttle", "perCaller", "cpu", "global", "criticalityShares".
GRPC_RESILIENCE_EXPORT absl::string_view EnforcedPolicyName(EnforcedPolicy policy);

/// ParseEnforcedPolicy()
///
/// The policy named exactly `name` (as EnforcedPolicyName() writes it);
/// nullopt for anything else.
GRPC_RESILIENCE_EXPORT std::optional<EnforcedPolicy> ParseEnforcedPolicy(absl::string_view name);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_ENFORCEMENT_MODE_H_
