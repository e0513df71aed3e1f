#include "src/retry/windowed_retry_budget.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "src/retry/retry_budget.h"

namespace resilience {
namespace {

constexpr absl::Duration kMinTtl = absl::Seconds(1);
constexpr absl::Duration kMaxTtl = absl::Seconds(60);

// min_retries_per_second x ttl in milli-tokens; NaN and negatives are 0.
int64_t ReserveMilli(double per_second, absl::Duration ttl) {
  if (!(per_second > 0.0)) return 0;
  const double per = std::min(per_second, WindowedRetryBudget::kMaxMinRetriesPerSecond);
  return std::llround(per * absl::ToDoubleSeconds(ttl) * 1000);
}

}  // namespace

absl::Status WindowedRetryBudget::Validate(const Options& options) {
  if (absl::Status s = RetryBudget::ValidateTokenRatio(options.token_ratio); !s.ok()) return s;
  if (options.ttl < kMinTtl || options.ttl > kMaxTtl) {
    return absl::InvalidArgumentError(absl::StrCat(
        "retry_budget.ttl: must be in [", absl::FormatDuration(kMinTtl), ", ",
        absl::FormatDuration(kMaxTtl), "], got ", absl::FormatDuration(options.ttl)));
  }
  if (options.initial_tokens < 0 || options.initial_tokens > kMaxInitialTokens) {
    return absl::InvalidArgumentError(absl::StrCat("retry_budget.initial_tokens: must be in [0, ",
                                                   kMaxInitialTokens, "], got ",
                                                   options.initial_tokens));
  }
  if (!(options.min_retries_per_second >= 0 &&
        options.min_retries_per_second <= kMaxMinRetriesPerSecond)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "retry_budget.min_retries_per_second: must be in [0, ", kMaxMinRetriesPerSecond,
        "], got ", options.min_retries_per_second));
  }
  return absl::OkStatus();
}

WindowedRetryBudget::WindowedRetryBudget(const Options& options, Clock& clock)
    : clock_(clock),
      origin_(clock.Now()),
      bucket_ns_(absl::ToInt64Nanoseconds(std::clamp(options.ttl, kMinTtl, kMaxTtl)) / kBuckets),
      ratio_milli_(RetryBudget::RatioMilli(options.token_ratio)),
      reserve_milli_(ReserveMilli(options.min_retries_per_second,
                                  std::clamp(options.ttl, kMinTtl, kMaxTtl))) {
  MutexLock lock(&mu_);
  Add(int64_t{std::clamp(options.initial_tokens, 0, kMaxInitialTokens)} * 1000);
}

int64_t WindowedRetryBudget::PeriodOf(absl::Time now) const {
  return std::max<int64_t>(0, absl::ToInt64Nanoseconds(now - origin_) / bucket_ns_);
}

void WindowedRetryBudget::Advance(int64_t period) {
  if (period <= period_) return;
  // Every period after period_ up to `period` reuses a slot whose content
  // expired; after kBuckets of them the whole ring has.
  const int64_t cleared = std::min<int64_t>(period - period_, kBuckets);
  for (int64_t p = period - cleared + 1; p <= period; ++p) {
    int64_t& slot = net_[static_cast<size_t>(p % kBuckets)];
    balance_ -= slot;
    slot = 0;
  }
  period_ = period;
}

void WindowedRetryBudget::Add(int64_t milli) {
  net_[static_cast<size_t>(period_ % kBuckets)] += milli;
  balance_ += milli;
}

void WindowedRetryBudget::RecordCall() {
  const int64_t period = PeriodOf(clock_.Now());
  MutexLock lock(&mu_);
  Advance(period);
  Add(ratio_milli_);
}

bool WindowedRetryBudget::AllowRetry() {
  const int64_t period = PeriodOf(clock_.Now());
  MutexLock lock(&mu_);
  Advance(period);
  return balance_ + reserve_milli_ >= 1000;
}

bool WindowedRetryBudget::TryWithdraw() {
  const int64_t period = PeriodOf(clock_.Now());
  MutexLock lock(&mu_);
  Advance(period);
  if (balance_ + reserve_milli_ < 1000) return false;
  Add(-1000);
  return true;
}

double WindowedRetryBudget::tokens() {
  const int64_t period = PeriodOf(clock_.Now());
  MutexLock lock(&mu_);
  Advance(period);
  return static_cast<double>(balance_ + reserve_milli_) / 1000.0;
}

}  // namespace resilience
