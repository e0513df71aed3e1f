#include "src/policy/hedging_settings.h"

#include "absl/strings/str_cat.h"
#include "src/policy/field_readers.h"
#include "src/policy/status_codes.h"

namespace resilience {
namespace {

template <typename T>
absl::Status Invalid(absl::string_view path, absl::string_view rule, const T& value) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": must be ", rule, ", got ", value));
}

}  // namespace

absl::StatusOr<HedgingSettings> ReadHedgingSettings(const resilience::v1::HedgingPolicy& p,
                                                    const std::string& path,
                                                    std::vector<std::string>& warnings) {
  HedgingSettings h;
  if (!p.has_max_attempts()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".maxAttempts: required (at least 2), as in gRPC"));
  }
  if (p.max_attempts() < 2) return Invalid(path + ".maxAttempts", "at least 2", p.max_attempts());
  h.max_attempts = p.max_attempts();
  if (h.max_attempts > HedgingDecider::kMaxAttempts) {
    warnings.push_back(absl::StrCat(path, ".maxAttempts: ", h.max_attempts,
                                    " is clamped to ", HedgingDecider::kMaxAttempts,
                                    ", as gRPC does"));
    h.max_attempts = HedgingDecider::kMaxAttempts;
  }
  if (absl::Status s = ReadDurations(path, {{"hedgingDelay", p.has_hedging_delay(),
                                             p.hedging_delay(), NonNegative(kMaxPolicyInterval),
                                             &h.delay}});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<absl::StatusCode>> codes =
      ReadErrorCodes(path + ".nonFatalStatusCodes", p.non_fatal_status_codes());
  if (!codes.ok()) return codes.status();
  h.non_fatal_status_codes = *std::move(codes);  // none by default
  if (p.has_adaptive_delay()) {
    const resilience::v1::AdaptiveHedgingDelay& a = p.adaptive_delay();
    HedgingDecider::AdaptiveDelay adaptive;
    if (a.has_percentile()) {
      if (!(a.percentile() >= 50.0 && a.percentile() <= 99.9)) {
        return Invalid(path + ".adaptiveDelay.percentile", "in [50, 99.9]", a.percentile());
      }
      adaptive.percentile = a.percentile();
    }
    if (absl::Status s = ReadDurations(path + ".adaptiveDelay",
                                       {{"floor", a.has_floor(), a.floor(),
                                         NonNegative(kMaxPolicyInterval), &adaptive.floor}});
        !s.ok()) {
      return s;
    }
    h.adaptive_delay = adaptive;
  } else if (h.delay == absl::ZeroDuration()) {
    // Not an error: A6's meaning (every attempt at once). Said, since it
    // multiplies every call's load by maxAttempts until the budget stops it.
    warnings.push_back(absl::StrCat(path, ".hedgingDelay: 0 sends all ", h.max_attempts,
                                    " attempts of every call at once (until the retry budget "
                                    "stops them)"));
  }
  return h;
}

}  // namespace resilience
