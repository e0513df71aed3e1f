#include "src/policy/duration_fields.h"

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status ReadDurations(absl::string_view path, std::initializer_list<DurationField> fields) {
  for (const DurationField& f : fields) {
    if (!f.set) continue;
    const absl::Duration value = ToDuration(f.value);
    const bool low_ok = f.range.low_open ? value > f.range.low : value >= f.range.low;
    if (!low_ok || value > f.range.high) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".", f.name, ": must be in ", f.range.low_open ? "(" : "[",
          absl::FormatDuration(f.range.low), ", ", absl::FormatDuration(f.range.high), "], got ",
          absl::FormatDuration(value)));
    }
    if (f.out != nullptr) *f.out = value;
  }
  return absl::OkStatus();
}

}  // namespace resilience
