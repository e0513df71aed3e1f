// File: src/policy/retry_shedding_policy.h
//
// The policy loader's reading of throttle.retryShedding.

#ifndef GRPC_RESILIENCE_SRC_POLICY_RETRY_SHEDDING_POLICY_H_
#define GRPC_RESILIENCE_SRC_POLICY_RETRY_SHEDDING_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "src/policy/method_policy.h"

namespace resilience {
namespace v1 {
class ThrottlePolicy;
}  // namespace v1

// ReadRetryShedding()
//
// Sets throttle->retry_shedding from `p`'s retryShedding, found at `path`
// ("methodConfig[0].throttle"), with every default applied; nothing when
// `p` has none. InvalidArgument naming the field's path and value
// otherwise ("methodConfig[0].throttle.retryShedding.retryShare: must be in
// [0, 1], got 1.5").
absl::Status ReadRetryShedding(const v1::ThrottlePolicy& p, const std::string& path,
                               ThrottleSettings& throttle);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_RETRY_SHEDDING_POLICY_H_
