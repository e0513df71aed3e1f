// File: src/policy/status_codes.h
//
// Status codes by name, as they appear in policy files ("UNAVAILABLE"). The
// names and numbers are gRPC's; absl::StatusCode has the same values.

#ifndef GRPC_RESILIENCE_SRC_POLICY_STATUS_CODES_H_
#define GRPC_RESILIENCE_SRC_POLICY_STATUS_CODES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"

namespace resilience {

// The number of gRPC status codes (OK = 0 .. UNAUTHENTICATED = 16).
inline constexpr int kNumStatusCodes = 17;

// ParseStatusCodeName()
//
// The code named `name` (upper case, as gRPC spells it: "DEADLINE_EXCEEDED");
// InvalidArgument listing the valid names otherwise.
absl::StatusOr<absl::StatusCode> ParseStatusCodeName(absl::string_view name);

// ReadStatusCode()
//
// The code named `name`, a policy file's value at JSON path `path`; the
// error starts with the path and shows the name made printable.
absl::StatusOr<absl::StatusCode> ReadStatusCode(absl::string_view path, absl::string_view name);

// ReadErrorCodes()
//
// The codes a list at `path` names, in order; each must be an error code
// ("<path>[i]: must be an error code, got OK").
absl::StatusOr<std::vector<absl::StatusCode>> ReadErrorCodes(
    absl::string_view path, const google::protobuf::RepeatedPtrField<std::string>& names);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_STATUS_CODES_H_
