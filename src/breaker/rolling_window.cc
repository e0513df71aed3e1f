#include "src/breaker/rolling_window.h"

#include <sched.h>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status RollingWindow::Validate(absl::Duration window, int buckets,
                                     absl::string_view field_prefix) {
  if (window < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, ".window: must be >= 1ms, got ", absl::FormatDuration(window)));
  }
  if (buckets < 1 || buckets > kMaxBuckets) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, ".buckets: must be in [1, ", kMaxBuckets, "], got ", buckets));
  }
  const int64_t window_ms = absl::ToInt64Milliseconds(window);
  if (absl::Milliseconds(window_ms) != window || window_ms % buckets != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field_prefix, ".window: ", absl::FormatDuration(window), " does not divide into ",
        buckets, " buckets of whole milliseconds (", field_prefix, ".buckets)"));
  }
  return absl::OkStatus();
}

RollingWindow::RollingWindow(absl::Duration window, int buckets)
    : bucket_ns_(absl::ToInt64Nanoseconds(window) / buckets),
      buckets_(buckets),
      // A Bucket is 32 bytes; round each stripe up to whole 64-byte lines.
      stride_((static_cast<size_t>(buckets) + 1) / 2 * 2),
      current_period_(0),
      buckets_storage_(new Bucket[stride_ * kStripes]) {}

int RollingWindow::CurrentStripe() {
  const int cpu = sched_getcpu();
  return cpu < 0 ? 0 : cpu % kStripes;
}

int64_t RollingWindow::PeriodOf(absl::Time now) const {
  return absl::ToUnixNanos(now) / bucket_ns_;
}

bool RollingWindow::Advance(int64_t period) {
  int64_t current = current_period_.load(std::memory_order_acquire);
  if (period <= current) return period > current - buckets_;
  MutexLock lock(&rotate_mu_);
  current = current_period_.load(std::memory_order_relaxed);
  if (period <= current) return period > current - buckets_;
  // Clear the slots of the periods that start now; at most one full ring.
  const int64_t first = std::max(current + 1, period - buckets_ + 1);
  for (int64_t p = first; p <= period; ++p) ClearSlot(static_cast<int>(p % buckets_));
  current_period_.store(period, std::memory_order_release);
  return true;
}

void RollingWindow::ClearSlot(int slot) {
  for (int s = 0; s < kStripes; ++s) {
    Bucket& bucket = BucketAt(s, slot);
    for (int c = 0; c < kNumCounters; ++c) {
      const int64_t old = bucket.counts[c].exchange(0, std::memory_order_relaxed);
      if (old != 0) totals_[s].counts[c].fetch_sub(old, std::memory_order_relaxed);
    }
  }
}

void RollingWindow::Add(absl::Time now, Counter counter, int64_t n) {
  const int64_t period = PeriodOf(now);
  if (!Advance(period)) return;
  const int stripe = CurrentStripe();
  BucketAt(stripe, static_cast<int>(period % buckets_))
      .counts[counter]
      .fetch_add(n, std::memory_order_relaxed);
  totals_[stripe].counts[counter].fetch_add(n, std::memory_order_relaxed);
}

RollingWindow::Counts RollingWindow::Sum(absl::Time now) {
  Advance(PeriodOf(now));
  Counts c;
  for (const Totals& t : totals_) {
    c.success += t.counts[kSuccess].load(std::memory_order_relaxed);
    c.failure += t.counts[kFailure].load(std::memory_order_relaxed);
    c.rejected += t.counts[kRejected].load(std::memory_order_relaxed);
    c.slow += t.counts[kSlow].load(std::memory_order_relaxed);
  }
  return c;
}

void RollingWindow::Reset(absl::Time now) {
  const int64_t period = PeriodOf(now);
  Advance(period);
  MutexLock lock(&rotate_mu_);
  for (int slot = 0; slot < buckets_; ++slot) ClearSlot(slot);
}

}  // namespace resilience
