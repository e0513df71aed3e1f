#include "src/limits/aimd_concurrency_limiter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status AimdConcurrencyLimiter::Validate(const Options& o) {
  if (absl::Status s = AdaptiveConcurrencyLimiter::Validate(o); !s.ok()) return s;
  if (!(o.backoff_ratio >= 0.1 && o.backoff_ratio < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backoff_ratio: must be in [0.1, 1), got ", o.backoff_ratio));
  }
  if (o.timeout <= absl::ZeroDuration() || o.timeout > kMaxTimeout) {
    return absl::InvalidArgumentError(absl::StrCat("timeout: must be in (0, 720h], got ",
                                                   absl::FormatDuration(o.timeout)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AimdConcurrencyLimiter>> AimdConcurrencyLimiter::Create(
    const Options& options, Clock& clock) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  return std::unique_ptr<AimdConcurrencyLimiter>(new AimdConcurrencyLimiter(options, clock));
}

AimdConcurrencyLimiter::AimdConcurrencyLimiter(const Options& options, Clock& clock)
    : AdaptiveConcurrencyLimiter(options, options.timeout, clock,
                                 Decision{options.initial_limit,
                                          clock.Now() + options.sample_window,
                                          options.min_samples, absl::InfinitePast()}),
      aimd_options_(options),
      estimate_(static_cast<double>(options.initial_limit)) {}

AdaptiveConcurrencyLimiter::Decision AimdConcurrencyLimiter::OnWindow(const Window& w) {
  if (w.drops > 0) {
    estimate_ *= aimd_options_.backoff_ratio;
  } else if (static_cast<double>(w.max_in_flight) * 2 >= estimate_) {
    estimate_ += 1.0;
  }
  estimate_ = std::clamp(estimate_, static_cast<double>(options_.min_limit),
                         static_cast<double>(options_.max_limit));
  return Decision{static_cast<int64_t>(std::llround(estimate_)), w.now + options_.sample_window,
                  options_.min_samples, absl::InfinitePast()};
}

}  // namespace resilience
