#include "src/policy/hedging_settings.h"

#include "absl/strings/str_cat.h"
#include "src/policy/json_text.h"
#include "src/policy/status_codes.h"

namespace resilience {
namespace {

absl::Duration ToDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

template <typename T>
absl::Status Invalid(absl::string_view path, absl::string_view rule, const T& value) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": must be ", rule, ", got ", value));
}

// A duration in [0, kMaxPolicyInterval].
absl::Status ReadInterval(const google::protobuf::Duration& d, const std::string& path,
                          absl::Duration& out) {
  const absl::Duration value = ToDuration(d);
  if (value < absl::ZeroDuration() || value > kMaxPolicyInterval) {
    return Invalid(path, absl::StrCat("in [0, ", absl::FormatDuration(kMaxPolicyInterval), "]"),
                   absl::FormatDuration(value));
  }
  out = value;
  return absl::OkStatus();
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
  if (p.has_hedging_delay()) {
    if (absl::Status s = ReadInterval(p.hedging_delay(), path + ".hedgingDelay", h.delay);
        !s.ok()) {
      return s;
    }
  }
  for (int i = 0; i < p.non_fatal_status_codes_size(); ++i) {
    const std::string code_path = absl::StrCat(path, ".nonFatalStatusCodes[", i, "]");
    absl::StatusOr<absl::StatusCode> code = ParseStatusCodeName(p.non_fatal_status_codes(i));
    if (!code.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          code_path, ": ",
          ParseStatusCodeName(internal::Printable(p.non_fatal_status_codes(i), 64))
              .status()
              .message()));
    }
    if (*code == absl::StatusCode::kOk) return Invalid(code_path, "an error code", "OK");
    h.non_fatal_status_codes.push_back(*code);
  }
  if (p.has_adaptive_delay()) {
    const resilience::v1::AdaptiveHedgingDelay& a = p.adaptive_delay();
    HedgingDecider::AdaptiveDelay adaptive;
    if (a.has_percentile()) {
      if (!(a.percentile() >= 50.0 && a.percentile() <= 99.9)) {
        return Invalid(path + ".adaptiveDelay.percentile", "in [50, 99.9]", a.percentile());
      }
      adaptive.percentile = a.percentile();
    }
    if (a.has_floor()) {
      if (absl::Status s = ReadInterval(a.floor(), path + ".adaptiveDelay.floor", adaptive.floor);
          !s.ok()) {
        return s;
      }
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
