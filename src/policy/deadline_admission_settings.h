// File: src/policy/deadline_admission_settings.h
//
// Loads a throttle's `deadlineAdmission` (ThrottlePolicy.deadline_admission)
// into DeadlineAdmission::Options.

#ifndef GRPC_RESILIENCE_SRC_POLICY_DEADLINE_ADMISSION_SETTINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_DEADLINE_ADMISSION_SETTINGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "resilience/v1/policy.pb.h"
#include "src/limits/deadline_admission.h"

namespace resilience {

// ReadDeadlineAdmission()
//
// The options `p` sets over DeadlineAdmission::Options' defaults, at JSON
// path `path` ("methodConfig[0].throttle.deadlineAdmission"); an error names
// the field's path and its value (DeadlineAdmission::Validate()).
absl::StatusOr<DeadlineAdmission::Options> ReadDeadlineAdmission(
    const v1::DeadlineAdmission& p, const std::string& path);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_DEADLINE_ADMISSION_SETTINGS_H_
