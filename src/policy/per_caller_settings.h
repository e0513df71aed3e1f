// File: src/policy/per_caller_settings.h
//
// The resolved settings of a throttle.perCaller entry (the same limits for
// each caller key). See PerCallerThrottle in
// proto/resilience/v1/policy.proto for the meaning of each field.

#ifndef GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_SETTINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_SETTINGS_H_

#include <optional>
#include <string>

#include "grpc_resilience/enforcement_mode.h"
#include "src/limits/per_caller_limits.h"
#include "src/policy/global_throttle_settings.h"

namespace resilience {

struct PerCallerSettings {
  // The key: the value of request header `header`, or (header empty) the
  // peer's identity.
  std::string header;
  // PerCallerLimits::Validate() accepts these (with `fleet` set when
  // `global` is).
  PerCallerLimits::Options limits;
  // throttle.perCaller.global: a fleet-wide bucket per key in Redis; `key`
  // is the prefix of the keys' Redis keys (empty: PerCallerFleetPrefix()).
  std::optional<GlobalThrottleSettings> global;
  // perCaller.enforcement, for the key's limits and their fleet-wide part.
  EnforcementMode enforcement = EnforcementMode::kEnforce;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_SETTINGS_H_
