#include "src/server_interceptors/rejection_messages.h"

#include "absl/strings/str_cat.h"

namespace resilience {

RejectionMessages::RejectionMessages(absl::string_view method, const CriticalityShares& shares,
                                     std::optional<double> rate_per_second,
                                     std::optional<double> global_rate_per_second,
                                     absl::string_view unusable) {
  for (int i = 0; i < kCriticalityLevels; ++i) {
    const Criticality level = static_cast<Criticality>(i);
    if (rate_per_second.has_value()) {
      rate_[i] = absl::StrCat(method, ": rate limit ", *rate_per_second, "/s reached",
                              ForLevel(shares, level));
    }
    if (global_rate_per_second.has_value()) {
      global_rate_[i] = absl::StrCat(method, ": global rate limit ", *global_rate_per_second,
                                     "/s reached", ForLevel(shares, level));
    }
  }
  if (!unusable.empty()) unusable_ = absl::StrCat(method, ": throttle not usable: ", unusable);
}

std::string RejectionMessages::ForLevel(const CriticalityShares& shares, Criticality level) {
  const double share = shares.share(level);
  if (share >= 1.0) return "";
  return absl::StrCat(" for ", CriticalityName(level), " calls (share ", share, ")");
}

}  // namespace resilience
