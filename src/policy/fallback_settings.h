// File: src/policy/fallback_settings.h
//
// Loads a policy entry's `fallback` (methodConfig[].fallback) into a
// StaticFallback (method_policy.h).

#ifndef GRPC_RESILIENCE_SRC_POLICY_FALLBACK_SETTINGS_H_
#define GRPC_RESILIENCE_SRC_POLICY_FALLBACK_SETTINGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "resilience/v1/policy.pb.h"
#include "src/policy/method_policy.h"

namespace resilience {

// ReadFallback()
//
// The fallback of `entry` (which has one), at JSON path `path`
// ("methodConfig[0].fallback"). A `response` is checked against the
// response type of every method the entry names, found in protobuf's
// generated pool, and kept serialized. Errors name the path and the value;
// nullopt, with a warning, when a method is not linked into the process (its
// response type is unknown here). Warnings about what the fallback will
// never answer go to `warnings`.
absl::StatusOr<std::optional<StaticFallback>> ReadFallback(const v1::MethodConfig& entry,
                                                           const std::string& path,
                                                           std::vector<std::string>& warnings);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_FALLBACK_SETTINGS_H_
