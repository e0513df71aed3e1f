#include "src/limits/gradient_concurrency_limiter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

// The share of `smoothing` a window that grows the limit gets.
constexpr double kGrowthWeight = 0.7;
// Each interval between baseline measurements is baseline_interval times a
// factor drawn uniformly in [1 - this, 1 + this].
constexpr double kIntervalJitter = 0.25;
// The weight of each window's median in `recent_` (about the last ten
// windows).
constexpr double kRecentWeight = 0.1;
// A baseline measurement is given up once this many times baseline_samples
// calls admitted under its pin went unanswered (cancelled by their clients,
// or expired too soon to be samples): a pin that only such calls reach
// learns nothing and only rejects calls.
constexpr int64_t kUnansweredPerSample = 5;

}  // namespace

absl::Status GradientConcurrencyLimiter::Validate(const Options& o) {
  if (absl::Status s = AdaptiveConcurrencyLimiter::Validate(o); !s.ok()) return s;
  // Written so that NaN fails.
  if (!(o.tolerance >= 0.0 && o.tolerance <= 10.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tolerance: must be in [0, 10], got ", o.tolerance));
  }
  if (!(o.smoothing > 0.0 && o.smoothing <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("smoothing: must be in (0, 1], got ", o.smoothing));
  }
  if (o.baseline_interval < o.sample_window || o.baseline_interval > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline_interval: must be in [sample_window (", absl::FormatDuration(o.sample_window),
        "), 1h], got ", absl::FormatDuration(o.baseline_interval)));
  }
  if (o.baseline_samples < 1 || o.baseline_samples > kMaxSamples) {
    return absl::InvalidArgumentError(absl::StrCat("baseline_samples: must be in [1, ",
                                                   kMaxSamples, "], got ", o.baseline_samples));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GradientConcurrencyLimiter>> GradientConcurrencyLimiter::Create(
    const Options& options, Clock& clock) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return std::unique_ptr<GradientConcurrencyLimiter>(
      new GradientConcurrencyLimiter(options, clock));
}

// Starts with a baseline measurement: the limit pinned to min_limit, every
// call sampled from now on.
GradientConcurrencyLimiter::GradientConcurrencyLimiter(const Options& options, Clock& clock)
    : AdaptiveConcurrencyLimiter(options, absl::InfiniteDuration(), clock,
                                 Decision{options.min_limit, clock.Now(), options.baseline_samples,
                                          clock.Now(), absl::InfiniteDuration(),
                                          options.baseline_samples * kUnansweredPerSample}),
      gradient_options_(options),
      estimate_(static_cast<double>(options.initial_limit)),
      pin_start_(clock.Now()),
      jitter_(static_cast<uint64_t>(absl::ToUnixNanos(clock.Now()))) {}

absl::Duration GradientConcurrencyLimiter::baseline() {
  MutexLock lock(&mu_);
  return baseline_;
}

bool GradientConcurrencyLimiter::measuring() {
  MutexLock lock(&mu_);
  return measuring_;
}

int64_t GradientConcurrencyLimiter::measurements_given_up() {
  MutexLock lock(&mu_);
  return measurements_given_up_;
}

AdaptiveConcurrencyLimiter::Decision GradientConcurrencyLimiter::StartMeasuring(absl::Time now) {
  measuring_ = true;
  pin_start_ = now;
  return Pinned(now);
}

AdaptiveConcurrencyLimiter::Decision GradientConcurrencyLimiter::Pinned(absl::Time now) {
  // Only calls admitted under the pin count: they found at most min_limit
  // calls in flight, so their latency holds no queueing of ours. Calls that
  // expire too soon to be samples do not close the window (its samples
  // would go with it); enough unanswered calls do.
  Decision pinned{options_.min_limit, now, gradient_options_.baseline_samples, pin_start_};
  pinned.give_up_after = gradient_options_.baseline_samples * kUnansweredPerSample;
  return pinned;
}

void GradientConcurrencyLimiter::ScheduleMeasurement(absl::Time now) {
  const double factor = 1.0 + kIntervalJitter * (2 * jitter_.NextUniform() - 1);
  next_measurement_ = now + gradient_options_.baseline_interval * factor;
}

AdaptiveConcurrencyLimiter::Decision GradientConcurrencyLimiter::Normal(absl::Time now) {
  // A call that expired after running at least as long as the baseline was
  // slow: a sample. A shorter one is not (its client's deadline was shorter
  // than the calls: it says nothing about how long they take).
  return Decision{static_cast<int64_t>(std::llround(estimate_)), now + options_.sample_window,
                  options_.min_samples, absl::InfinitePast(), baseline_};
}

AdaptiveConcurrencyLimiter::Decision GradientConcurrencyLimiter::OnWindow(const Window& w) {
  const absl::Duration median = std::max(w.median_latency, absl::Nanoseconds(1));
  if (measuring_) {
    if (w.samples < gradient_options_.baseline_samples) {
      // Closed by unanswered calls: given up (the baseline, if any, stays),
      // tried again at the next interval.
      if (w.unanswered >= gradient_options_.baseline_samples * kUnansweredPerSample) {
        measuring_ = false;
        ++measurements_given_up_;
        ScheduleMeasurement(w.now);
        return Normal(w.now);
      }
      return Pinned(w.now);
    }
    measuring_ = false;
    baseline_ = median;
    recent_ = median;
    ScheduleMeasurement(w.now);
    // The limit from before the measurement comes back.
    return Normal(w.now);
  }
  if (w.now >= next_measurement_) return StartMeasuring(w.now);
  // Only drops, no latency; or no baseline yet (its first measurement was
  // given up): nothing to compare, the limit stays.
  if (w.samples == 0 || baseline_ == absl::InfiniteDuration()) return Normal(w.now);
  // A backend that got faster lowers the baseline at once, but only as the
  // recent windows' medians together say: the lowest of many noisy window
  // statistics is below their typical value, and a baseline that is would
  // make ordinary windows look queued.
  recent_ = recent_ + (median - recent_) * kRecentWeight;
  baseline_ = std::min(baseline_, recent_);
  const double gradient =
      std::clamp(absl::FDivDuration(baseline_, median) * (1.0 + gradient_options_.tolerance), 0.5,
                 2.0);
  double target = estimate_ * gradient + std::sqrt(estimate_);
  // Grow only a limit that was reached during the window. Below it, the load
  // (not the limit) decided how many calls ran: growing would only be a
  // promise the backend never kept, and would let the next burst through
  // unchecked (at a load equal to the capacity, the quiet windows between
  // bursts would grow a limit that is not binding).
  if (target > estimate_ && w.max_in_flight < std::llround(estimate_)) target = estimate_;
  // Growth is weighed less than shrinking: a shrink answers measured
  // queueing, growth only the headroom's guess that the backend could take
  // more, and one window of growth too many lets a burst queue up.
  const double smoothing =
      gradient_options_.smoothing * (target > estimate_ ? kGrowthWeight : 1.0);
  estimate_ = std::clamp((1.0 - smoothing) * estimate_ + smoothing * target,
                         static_cast<double>(options_.min_limit),
                         static_cast<double>(options_.max_limit));
  return Normal(w.now);
}

}  // namespace resilience
