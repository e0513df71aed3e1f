// File: src/policy/struct_checks.h
//
// Checks of the free-form google.protobuf.Struct fields of a policy file
// (loadBalancingConfig, healthCheckConfig) as gRPC reads them, for
// LoadBalancingChecker: messages "<path>: <what>". Pure functions:
// thread-safe. Walks google.protobuf.Struct maps: compiled without
// ThreadSanitizer (src/policy/CMakeLists.txt says why).

#ifndef GRPC_RESILIENCE_SRC_POLICY_STRUCT_CHECKS_H_
#define GRPC_RESILIENCE_SRC_POLICY_STRUCT_CHECKS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"

namespace resilience::internal {

// `value` as a message shows it: null, true, 0.5, "text" (made printable),
// an object, an array.
std::string Describe(const google::protobuf::Value& value);

// InvalidArgument "<path>: <what>".
absl::Status Bad(absl::string_view path, absl::string_view what);

// `value` as canonical JSON: keys sorted, numbers shortest, no spaces but
// after ':' and ','.
std::string ToJson(const google::protobuf::Value& value);

// Refuses every field of `object` (at `path`, of the policy named `owner`)
// not in `known`, the first in key order.
absl::Status OnlyFields(const google::protobuf::Struct& object, const std::string& path,
                        absl::string_view owner, std::initializer_list<absl::string_view> known);

// The field `name` of `object`, when there, as gRPC reads a duration:
// "<seconds>[.<up to 9 digits>]s", in (0s, max_seconds]; into `*out` when
// not null.
absl::Status Duration(const google::protobuf::Struct& object, const std::string& path,
                      absl::string_view name, int64_t max_seconds,
                      absl::Duration* out = nullptr);

// The field `name` of `object`, when there, as gRPC reads an unsigned
// integer, here in [low, high]; into `*out` when not null.
absl::Status Integer(const google::protobuf::Struct& object, const std::string& path,
                     absl::string_view name, uint64_t low, uint64_t high,
                     uint64_t* out = nullptr);

}  // namespace resilience::internal

#endif  // GRPC_RESILIENCE_SRC_POLICY_STRUCT_CHECKS_H_
