// File: src/policy/enforcement_setting.h
//
// ReadEnforcement(): an enforcing block's `enforcement` field ("enforce",
// "shadow", "off"; grpc_resilience/enforcement_mode.h) as the loader reads it.

#ifndef GRPC_RESILIENCE_SRC_POLICY_ENFORCEMENT_SETTING_H_
#define GRPC_RESILIENCE_SRC_POLICY_ENFORCEMENT_SETTING_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpc_resilience/enforcement_mode.h"
#include "resilience/v1/policy.pb.h"

namespace resilience {

// ReadEnforcement()
//
// The mode `value` names, read at `path` (the block, e.g.
// "methodConfig[0].breaker"): kEnforce when empty (the field unset); an
// InvalidArgument naming `path`.enforcement and the value otherwise.
absl::StatusOr<EnforcementMode> ReadEnforcement(absl::string_view value, absl::string_view path);

// WithoutClientEnforcement()
//
// `entry` without breaker.enforcement and bulkhead.enforcement: the client
// switches those in place, without replacing the breaker or the bulkhead
// (docs/shadow-mode.md), so they are left out of the canonical forms that
// decide what an update replaces (MethodPolicy::CanonicalForms).
::resilience::v1::MethodConfig WithoutClientEnforcement(::resilience::v1::MethodConfig entry);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_ENFORCEMENT_SETTING_H_
