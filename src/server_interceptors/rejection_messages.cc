#include "src/server_interceptors/rejection_messages.h"

#include "absl/strings/str_cat.h"

namespace resilience {

RejectionMessages::RejectionMessages(absl::string_view method, const CriticalityShares& shares,
                                     std::optional<double> rate_per_second,
                                     std::optional<double> global_rate_per_second,
                                     std::optional<int64_t> fixed_concurrency_limit,
                                     absl::string_view unusable, bool retried) {
  if (fixed_concurrency_limit.has_value()) concurrency_limit_ = *fixed_concurrency_limit;
  for (int i = 0; i < kCriticalityLevels; ++i) {
    const Criticality level = static_cast<Criticality>(i);
    if (rate_per_second.has_value()) {
      rate_[i] = absl::StrCat(method, ": rate limit ", *rate_per_second, "/s reached",
                              ForLevel(shares, level, retried));
    }
    if (global_rate_per_second.has_value()) {
      global_rate_[i] = absl::StrCat(method, ": global rate limit ", *global_rate_per_second,
                                     "/s reached", ForLevel(shares, level, retried));
    }
    if (fixed_concurrency_limit.has_value()) {
      concurrency_[i] = Concurrency(method, /*adaptive=*/false, concurrency_limit_,
                                    shares.ConcurrencyCap(concurrency_limit_, level), level, retried);
    }
  }
  if (!unusable.empty()) unusable_ = absl::StrCat(method, ": throttle not usable: ", unusable);
}

std::string RejectionMessages::ForLevel(const CriticalityShares& shares, Criticality level,
                                        bool retried) {
  const double share = shares.share(level);
  if (share >= 1.0) return "";
  return absl::StrCat(" for ", retried ? "retried " : "", CriticalityName(level), " calls (share ",
                      share, ")");
}

std::string RejectionMessages::Concurrency(absl::string_view method, bool adaptive,
                                           int64_t limit, int64_t cap, Criticality level,
                                           bool retried) {
  return absl::StrCat(method, adaptive ? ": adaptive" : ":", " concurrency limit ", limit,
                      " reached",
                      cap < limit ? absl::StrCat(" for ", retried ? "retried " : "",
                                                 CriticalityName(level), " calls (", cap,
                                                 " of ", limit, " slots)")
                                  : "");
}

}  // namespace resilience
