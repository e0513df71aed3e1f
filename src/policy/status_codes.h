// File: src/policy/status_codes.h
//
// Status codes by name, as they appear in policy files ("UNAVAILABLE"). The
// names and numbers are gRPC's; absl::StatusCode has the same values.

#ifndef GRPC_RESILIENCE_SRC_POLICY_STATUS_CODES_H_
#define GRPC_RESILIENCE_SRC_POLICY_STATUS_CODES_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace resilience {

// The number of gRPC status codes (OK = 0 .. UNAUTHENTICATED = 16).
inline constexpr int kNumStatusCodes = 17;

// ParseStatusCodeName()
//
// The code named `name` (upper case, as gRPC spells it: "DEADLINE_EXCEEDED");
// InvalidArgument listing the valid names otherwise.
absl::StatusOr<absl::StatusCode> ParseStatusCodeName(absl::string_view name);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_STATUS_CODES_H_
