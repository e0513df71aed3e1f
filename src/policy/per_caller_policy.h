// File: src/policy/per_caller_policy.h
//
// The policy loader's reading of throttle.perCaller.

#ifndef GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_POLICY_H_
#define GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_POLICY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/policy/per_caller_settings.h"

namespace resilience {
namespace v1 {
class PerCallerThrottle;
}  // namespace v1

// ReadPerCallerThrottle()
//
// The settings of `p`, found at `path` ("methodConfig[0].throttle.
// perCaller"), with every default applied; InvalidArgument naming the
// field's path and value otherwise. Whatever it accepts,
// PerCallerLimits::Create() accepts.
absl::StatusOr<PerCallerSettings> ReadPerCallerThrottle(const v1::PerCallerThrottle& p,
                                                        absl::string_view path);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_PER_CALLER_POLICY_H_
