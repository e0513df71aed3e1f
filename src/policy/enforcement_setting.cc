// File: src/policy/enforcement_setting.cc

#include "src/policy/enforcement_setting.h"

#include "absl/strings/str_cat.h"
#include "src/policy/json_text.h"

namespace resilience {

absl::StatusOr<EnforcementMode> ReadEnforcement(absl::string_view value, absl::string_view path) {
  if (value.empty()) return EnforcementMode::kEnforce;
  if (std::optional<EnforcementMode> mode = ParseEnforcementMode(value)) return *mode;
  return absl::InvalidArgumentError(
      absl::StrCat(path, ".enforcement: must be \"enforce\", \"shadow\" or \"off\", got \"",
                   internal::Printable(value, 64), "\""));
}

::resilience::v1::MethodConfig WithoutClientEnforcement(::resilience::v1::MethodConfig entry) {
  if (entry.has_breaker()) entry.mutable_breaker()->clear_enforcement();
  if (entry.has_bulkhead()) entry.mutable_bulkhead()->clear_enforcement();
  return entry;
}

}  // namespace resilience
