// File: src/policy/global_throttle_policy.h
//
// The policy loader's reading of throttle.global.

#ifndef GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_POLICY_H_
#define GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_POLICY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpc_resilience/internal/limits/global_rate_limiter.h"
#include "grpc_resilience/internal/policy/global_throttle_settings.h"

namespace resilience {
namespace v1 {
class GlobalThrottlePolicy;
}  // namespace v1

// ReadGlobalThrottle()
//
// The settings of `p`, found at `path` ("methodConfig[0].throttle.global"),
// with every default applied; InvalidArgument naming the field's path and
// value for a missing required field or one out of its bounds. Whatever it
// accepts, GlobalRateLimiter::Create() accepts.
absl::StatusOr<GlobalThrottleSettings> ReadGlobalThrottle(const v1::GlobalThrottlePolicy& p,
                                                          absl::string_view path);

// LimiterOptions()
//
// The GlobalRateLimiter options of `g` (without log and name), which
// GlobalRateLimiter::Validate() accepts for settings ReadGlobalThrottle()
// returned. Unused tokens live max(1s, leaseInterval).
GlobalRateLimiter::Options LimiterOptions(const GlobalThrottleSettings& g);

// The key of a scope whose policy leaves `key` out: "grpc_resilience:" and
// the scope ("*" for the default entry's empty one).
std::string DefaultGlobalThrottleKey(absl::string_view scope);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_GLOBAL_THROTTLE_POLICY_H_
