#include "src/limits/retry_shedding.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status RetryShedding::Validate(const Options& options) {
  // Written so that NaN fails too.
  if (!(options.retry_share >= 0.0 && options.retry_share <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("retry_share: must be in [0, 1], got ", options.retry_share));
  }
  return absl::OkStatus();
}

RetryShedding::RetryShedding(const CriticalityShares& shares, const Options& options)
    : options_(options), sheds_retries_(options.retry_share < 1.0) {
  std::array<double, kCriticalityLevels> scaled = shares.shares();
  // Each share scaled by the same factor in [0, 1]: still in [0, 1], and
  // still never larger for a less critical level.
  for (double& share : scaled) share *= options.retry_share;
  retry_shares_ = CriticalityShares(scaled);
}

bool RetryShedding::IsRetry(absl::string_view previous_attempts) {
  // Digits only, at least one of them not 0 (however long: nothing is
  // converted, so no value overflows).
  bool nonzero = false;
  for (const char c : previous_attempts) {
    if (c < '0' || c > '9') return false;
    nonzero = nonzero || c != '0';
  }
  return nonzero;
}

}  // namespace resilience
