#include "src/limits/criticality_shares.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

// The fields' names, snake_case as the policy loader expects them.
constexpr absl::string_view kFields[kCriticalityLevels] = {"critical_plus", "critical",
                                                           "sheddable_plus", "sheddable"};

}  // namespace

absl::Status CriticalityShares::Validate(const std::array<double, kCriticalityLevels>& shares) {
  for (int i = 0; i < kCriticalityLevels; ++i) {
    const double share = shares[i];
    const absl::string_view name = kFields[i];
    // Written so that NaN fails too.
    if (!(share >= 0.0 && share <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("criticality_shares.", name, ": must be in [0, 1], got ", share));
    }
    if (i > 0 && share > shares[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "criticality_shares.", name, ": must be <= criticality_shares.", kFields[i - 1], " (",
          shares[i - 1], "), got ", share));
    }
  }
  return absl::OkStatus();
}

int64_t CriticalityShares::ConcurrencyCap(int64_t limit, Criticality level) const {
  const double share = this->share(level);
  if (share >= 1.0) return limit;
  if (share <= 0.0) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(std::floor(share * static_cast<double>(limit))));
}

bool CriticalityShares::TryAcquire(ConcurrencyLimiter& limiter, Criticality level) const {
  if (share(level) < 1.0 && limiter.in_flight() >= ConcurrencyCap(limiter.limit(), level)) {
    return false;
  }
  return limiter.TryAcquire();
}

int64_t CriticalityShares::BucketCapacity(int64_t capacity_ns, int64_t interval_ns,
                                          Criticality level) const {
  const double share = this->share(level);
  if (share >= 1.0) return capacity_ns;
  if (share <= 0.0) return 0;
  const double scaled = share * static_cast<double>(capacity_ns);
  return std::clamp(static_cast<int64_t>(scaled), std::min(interval_ns, capacity_ns),
                    capacity_ns);
}

int64_t CriticalityShares::LeaseReserve(int64_t max_lease, Criticality level) const {
  const double share = this->share(level);
  if (share >= 1.0) return 0;
  return static_cast<int64_t>(std::ceil((1.0 - share) * static_cast<double>(max_lease)));
}

}  // namespace resilience
