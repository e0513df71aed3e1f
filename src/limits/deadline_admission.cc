#include "src/limits/deadline_admission.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status DeadlineAdmission::Validate(const Options& o, absl::string_view path) {
  if (!(o.percentile >= 0.5 && o.percentile <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".percentile: must be in [0.5, 1], got ", o.percentile));
  }
  if (!(o.max_share > 0.0 && o.max_share <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".maxShare: must be in (0, 1], got ", o.max_share));
  }
  const int64_t window_ms = absl::ToInt64Milliseconds(o.window);
  if (o.window < absl::Milliseconds(100) || o.window > absl::Hours(1) ||
      absl::Milliseconds(window_ms) != o.window || window_ms % kBuckets != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".window: must be in [100ms, 1h] and a whole multiple of 10ms, got ",
                     absl::FormatDuration(o.window)));
  }
  if (o.min_samples < 1 || o.min_samples > LatencyQuantile::kGeneration) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".minSamples: must be in [1, ",
                                                   LatencyQuantile::kGeneration, "], got ",
                                                   o.min_samples));
  }
  return absl::OkStatus();
}

DeadlineAdmission::DeadlineAdmission(const Options& options)
    : options_(options), arrivals_(options.window, kBuckets) {}

std::optional<absl::Duration> DeadlineAdmission::ServiceTime() const {
  return service_times_.Quantile(options_.percentile * 100.0, options_.min_samples);
}

DeadlineAdmission::Decision DeadlineAdmission::Decide(absl::Duration remaining, absl::Time now) {
  Decision decision;
  if (remaining != absl::InfiniteDuration()) decision.service_time = ServiceTime();
  if (!decision.service_time.has_value() || remaining >= *decision.service_time) {
    arrivals_.Add(now, RollingWindow::kSuccess);
    return decision;
  }
  {
    MutexLock lock(&mu_);
    const RollingWindow::Counts counts = arrivals_.Sum(now);
    // This arrival included on both sides.
    const double refused = static_cast<double>(counts.rejected + 1);
    const double arrivals = static_cast<double>(counts.success + counts.rejected + 1);
    if (refused <= options_.max_share * arrivals) {
      arrivals_.Add(now, RollingWindow::kRejected);
      decision.refuse = true;
      return decision;
    }
  }
  arrivals_.Add(now, RollingWindow::kSuccess);
  capped_.fetch_add(1, std::memory_order_relaxed);
  decision.capped = true;
  return decision;
}

}  // namespace resilience
