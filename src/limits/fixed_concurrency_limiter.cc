#include "src/limits/fixed_concurrency_limiter.h"

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status FixedConcurrencyLimiter::Validate(int64_t max_concurrency) {
  if (max_concurrency < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_concurrency: must be >= 1, got ", max_concurrency));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FixedConcurrencyLimiter>> FixedConcurrencyLimiter::Create(
    int64_t max_concurrency) {
  if (absl::Status s = Validate(max_concurrency); !s.ok()) return s;
  return std::make_unique<FixedConcurrencyLimiter>(max_concurrency);
}

}  // namespace resilience
