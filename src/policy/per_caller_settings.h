// File: src/policy/per_caller_settings.h
//
// The resolved settings of a throttle.perCaller entry (the same limits for
// each caller key). See PerCallerThrottle in
// proto/resilience/v1/policy.proto for the meaning of each field.

#ifndef GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_SETTINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_SETTINGS_H_

#include <string>

#include "src/limits/per_caller_limits.h"

namespace resilience {

struct PerCallerSettings {
  // The key: the value of request header `header`, or (header empty) the
  // peer's identity.
  std::string header;
  // PerCallerLimits::Validate() accepts these.
  PerCallerLimits::Options limits;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_SETTINGS_H_
