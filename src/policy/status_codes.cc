#include "src/policy/status_codes.h"

#include "absl/strings/str_cat.h"
#include "src/policy/json_text.h"

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

absl::StatusOr<absl::StatusCode> ReadStatusCode(absl::string_view path, absl::string_view name) {
  absl::StatusOr<absl::StatusCode> code = ParseStatusCodeName(name);
  if (code.ok()) return code;
  // The message quotes the name: again with the name made printable (the
  // same name when it is), so that no raw byte reaches it.
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": ", ParseStatusCodeName(internal::Printable(name, 64)).status().message()));
}

absl::StatusOr<std::vector<absl::StatusCode>> ReadErrorCodes(
    absl::string_view path, const google::protobuf::RepeatedPtrField<std::string>& names) {
  std::vector<absl::StatusCode> codes;
  for (int i = 0; i < names.size(); ++i) {
    const std::string code_path = absl::StrCat(path, "[", i, "]");
    absl::StatusOr<absl::StatusCode> code = ReadStatusCode(code_path, names.Get(i));
    if (!code.ok()) return code.status();
    if (*code == absl::StatusCode::kOk) {
      return absl::InvalidArgumentError(absl::StrCat(code_path, ": must be an error code, got OK"));
    }
    codes.push_back(*code);
  }
  return codes;
}

}  // namespace resilience
