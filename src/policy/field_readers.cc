#include "src/policy/field_readers.h"

#include "absl/strings/str_cat.h"
#include "src/limits/token_bucket.h"
#include "src/policy/json_text.h"

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

absl::Status ReadTokenRate(absl::string_view path, bool has_rate, double rate, bool has_burst,
                           int64_t burst, double* rate_out, int64_t* burst_out) {
  if (has_burst && !has_rate) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".burst: needs ratePerSecond"));
  }
  if (!has_rate) return absl::OkStatus();
  if (!has_burst) burst = TokenBucket::DefaultBurst(rate);
  if (absl::Status s = TokenBucket::Validate(rate, burst); !s.ok()) {
    return absl::InvalidArgumentError(internal::SnakeToCamel(absl::StrCat(path, ".", s.message())));
  }
  *rate_out = rate;
  *burst_out = burst;
  return absl::OkStatus();
}

}  // namespace resilience
