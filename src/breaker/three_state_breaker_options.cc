// ThreeStateBreaker::Options' rules (ThreeStateBreaker::Validate()): each
// message names the field, the rule and the value.

#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/breaker/three_state_breaker.h"

namespace resilience {
namespace {

template <typename T>
absl::Status Invalid(absl::string_view field, absl::string_view rule, const T& value) {
  return absl::InvalidArgumentError(
      absl::StrCat("three_state.", field, ": must be ", rule, ", got ", value));
}

}  // namespace

absl::Status ThreeStateBreaker::Validate(const Options& o) {
  if (!(o.failure_rate_threshold > 0.0 && o.failure_rate_threshold <= 1.0)) {
    return Invalid("failure_rate_threshold", "in (0, 1]", o.failure_rate_threshold);
  }
  if (o.min_requests < 1) return Invalid("min_requests", ">= 1", o.min_requests);
  if (o.consecutive_failures < 0) {
    return Invalid("consecutive_failures", ">= 0 (0 disables)", o.consecutive_failures);
  }
  if (o.slow_call_threshold < absl::ZeroDuration()) {
    return Invalid("slow_call_threshold", ">= 0", absl::FormatDuration(o.slow_call_threshold));
  }
  if (!(o.slow_call_rate_threshold >= 0.0 && o.slow_call_rate_threshold <= 1.0)) {
    return Invalid("slow_call_rate_threshold", "in [0, 1] (0 disables)",
                   o.slow_call_rate_threshold);
  }
  if (o.slow_call_rate_threshold > 0 && o.slow_call_threshold == absl::ZeroDuration()) {
    return Invalid("slow_call_rate_threshold", "0 when slow_call_threshold is not set",
                   o.slow_call_rate_threshold);
  }
  if (absl::Status s = RollingWindow::Validate(o.window, o.buckets, "three_state"); !s.ok()) {
    return s;
  }
  if (o.open_duration <= absl::ZeroDuration()) {
    return Invalid("open_duration", "> 0", absl::FormatDuration(o.open_duration));
  }
  if (!(o.open_duration_multiplier >= 1.0) || !std::isfinite(o.open_duration_multiplier)) {
    return Invalid("open_duration_multiplier", ">= 1", o.open_duration_multiplier);
  }
  if (o.max_open_duration < o.open_duration) {
    return Invalid("max_open_duration",
                   absl::StrCat(">= open_duration (", absl::FormatDuration(o.open_duration), ")"),
                   absl::FormatDuration(o.max_open_duration));
  }
  if (o.half_open_max_probes < 1) {
    return Invalid("half_open_max_probes", ">= 1", o.half_open_max_probes);
  }
  if (o.half_open_successes_to_close < 1) {
    return Invalid("half_open_successes_to_close", ">= 1", o.half_open_successes_to_close);
  }
  if (o.probe_interval < absl::ZeroDuration()) {
    return Invalid("probe_interval", ">= 0", absl::FormatDuration(o.probe_interval));
  }
  if (o.half_open_max_wait <= absl::ZeroDuration()) {
    return Invalid("half_open_max_wait", "> 0", absl::FormatDuration(o.half_open_max_wait));
  }
  if (o.probe_overdue < absl::ZeroDuration()) {
    return Invalid("probe_overdue", ">= 0 (0 disables)", absl::FormatDuration(o.probe_overdue));
  }
  return absl::OkStatus();
}

}  // namespace resilience
