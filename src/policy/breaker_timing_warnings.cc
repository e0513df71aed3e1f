#include "src/policy/breaker_timing_warnings.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace resilience {
namespace {

std::string Show(absl::Duration d) { return absl::FormatDuration(d); }

}  // namespace

void AppendBreakerTimingWarnings(const resilience::v1::BreakerPolicy& breaker,
                                 const MethodPolicy& policy, const std::string& path,
                                 std::vector<std::string>& warnings) {
  if (!breaker.has_three_state() || policy.breaker.kind != BreakerKind::kThreeState) return;
  const resilience::v1::ThreeStateBreakerPolicy& p = breaker.three_state();
  const ThreeStateBreaker::Options& o = policy.breaker.three_state;
  const std::string at = path + ".breaker.threeState.";

  // The longest an attempt (what the breaker admits) can last, and the
  // setting that makes it so.
  std::optional<absl::Duration> limit;
  std::string limit_path;
  if (policy.timeout.has_value()) {
    limit = *policy.timeout;
    limit_path = path + ".timeout";
  }
  if (policy.retry.has_value() && policy.retry->per_attempt_timeout.has_value() &&
      (!limit.has_value() || *policy.retry->per_attempt_timeout < *limit)) {
    limit = *policy.retry->per_attempt_timeout;
    limit_path = path + ".retryPolicy.perAttemptTimeout";
  }

  const bool overdue = p.has_probe_overdue() && o.probe_overdue > absl::ZeroDuration();
  if (overdue && limit.has_value() && o.probe_overdue >= *limit) {
    warnings.push_back(absl::StrCat(
        at, "probeOverdue: ", Show(o.probe_overdue), " is not shorter than ", limit_path, " (",
        Show(*limit), "): every probe has a result (its own or the timeout's) before it is "
        "overdue, so no extra probe ever goes"));
  }
  if (p.has_half_open_max_wait() && limit.has_value() && o.half_open_max_wait >= *limit) {
    warnings.push_back(absl::StrCat(
        at, "halfOpenMaxWait: ", Show(o.half_open_max_wait), " is not shorter than ", limit_path,
        " (", Show(*limit), "): every probe has a result (its own or the timeout's) before it, "
        "so it never re-opens the breaker"));
  }
  if (overdue && o.probe_overdue >= o.half_open_max_wait) {
    warnings.push_back(absl::StrCat(
        at, "probeOverdue: ", Show(o.probe_overdue), " is not shorter than halfOpenMaxWait (",
        Show(o.half_open_max_wait), "): a probe waiting that long re-opens the breaker first, "
        "so no extra probe ever goes"));
  }
  if (overdue && o.probe_overdue < o.probe_interval) {
    warnings.push_back(absl::StrCat(
        at, "probeOverdue: ", Show(o.probe_overdue), " is shorter than probeInterval (",
        Show(o.probe_interval), "): an extra probe is never closer than probeInterval to the "
        "last one, so it acts as ", Show(o.probe_interval)));
  }
}

}  // namespace resilience
