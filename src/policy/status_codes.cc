#include "src/policy/status_codes.h"

#include "absl/strings/str_cat.h"

namespace resilience {

absl::StatusOr<absl::StatusCode> ParseStatusCodeName(absl::string_view name) {
  for (int code = 0; code < kNumStatusCodes; ++code) {
    if (name == absl::StatusCodeToString(static_cast<absl::StatusCode>(code))) {
      return static_cast<absl::StatusCode>(code);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown status code \"", name,
      "\" (expected a gRPC code name such as UNAVAILABLE, DEADLINE_EXCEEDED or "
      "RESOURCE_EXHAUSTED)"));
}

}  // namespace resilience
