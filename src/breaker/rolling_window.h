// File: src/breaker/rolling_window.h
//
// A time-bucketed rolling window of call counts, shared by the SRE and the
// three-state breakers.

#ifndef GRPC_RESILIENCE_SRC_BREAKER_ROLLING_WINDOW_H_
#define GRPC_RESILIENCE_SRC_BREAKER_ROLLING_WINDOW_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "grpc_resilience/breaker_state.h"
#include "src/core/mutex.h"
#include "absl/time/time.h"

namespace resilience {

// RollingWindow
//
// Counts successes, failures, local rejections and slow calls over the last
// `window` of time, in `buckets` equal time buckets (a ring). A bucket that
// has fallen out of the window is cleared the first time the window is used
// after that, so an idle window costs nothing.
//
// The algorithm:
//   Time is cut into bucket periods of window/buckets; period e lives in ring
//   slot e % buckets. `current_period_` is the newest period the ring holds.
//   Add() and Sum() first Advance() to the caller's time: when it is in a
//   newer period, the slots between are cleared (their counts subtracted from
//   the running totals). Add() increments a slot and a running total; Sum()
//   reads only the running totals, so it costs the same for 10 or 1000
//   buckets.
//
// Striping: counters are split into kStripes stripes, each on its own cache
// lines, and a call writes to the stripe of the CPU it runs on
// (sched_getcpu(), a vDSO call), so calls running at the same moment on
// different CPUs do not fight over one cache line. Sum() adds up the
// stripes. (A stripe per thread was tried first: thread pools that come and
// go made threads share stripes by chance; CPUs cannot collide while there
// are no more CPUs than stripes.)
//
// Locking: Add() and Sum() are lock-free in the common case (an atomic load
// of the current period, one or two relaxed fetch_adds). Only Advance() into
// a new period takes `rotate_mu_`, at most once per bucket period. A thread
// stalled for a whole window between reading the time and adding could add to
// a slot that was recycled meanwhile; the count then lands in a newer bucket.
// This class is thread-safe.
class RollingWindow {
 public:
  enum Counter : int { kSuccess = 0, kFailure = 1, kRejected = 2, kSlow = 3 };
  static constexpr int kNumCounters = 4;
  static constexpr int kStripes = 8;
  static constexpr int kMaxBuckets = 1000;

  // What the window counted (the public BreakerWindowCounts).
  using Counts = BreakerWindowCounts;

  // Validate()
  //
  // OK, or InvalidArgument naming `field_prefix` + ".window"/".buckets" and
  // the bad value: window >= 1 ms, buckets in [1, 1000], and window divisible
  // by buckets into whole milliseconds (10 s / 40 = 250 ms is fine; 1 s / 3
  // is not).
  static absl::Status Validate(absl::Duration window, int buckets,
                               absl::string_view field_prefix);

  // `window` and `buckets` must pass Validate().
  RollingWindow(absl::Duration window, int buckets);

  RollingWindow(const RollingWindow&) = delete;
  RollingWindow& operator=(const RollingWindow&) = delete;

  // Add()
  //
  // Adds `n` to `counter` in the bucket of `now`, a monotonic time
  // (Clock::Now()). A `now` older than the window is dropped.
  void Add(absl::Time now, Counter counter, int64_t n = 1) ABSL_LOCKS_EXCLUDED(rotate_mu_);

  // Sum()
  //
  // The counts of the live buckets as of `now`.
  Counts Sum(absl::Time now) ABSL_LOCKS_EXCLUDED(rotate_mu_);

  // TrailingBuckets()
  //
  // Walking back from the newest complete bucket (the current, still-filling
  // one is skipped), the number of consecutive buckets that satisfy `pred`.
  // Costs O(buckets); meant for rare paths.
  template <typename Pred>
  int TrailingBuckets(absl::Time now, Pred pred) ABSL_LOCKS_EXCLUDED(rotate_mu_);

  // Reset()
  //
  // Clears every bucket, as of `now`.
  void Reset(absl::Time now) ABSL_LOCKS_EXCLUDED(rotate_mu_);

  int buckets() const { return buckets_; }
  absl::Duration window() const { return absl::Nanoseconds(bucket_ns_ * buckets_); }

 private:
  struct alignas(64) Totals {
    std::array<std::atomic<int64_t>, kNumCounters> counts{};
  };
  struct Bucket {
    std::array<std::atomic<int64_t>, kNumCounters> counts{};
  };

  int64_t PeriodOf(absl::Time now) const;
  // Brings the ring up to `period`; returns false when `period` is older than
  // the ring (then nothing should be added).
  bool Advance(int64_t period) ABSL_LOCKS_EXCLUDED(rotate_mu_);
  void ClearSlot(int slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rotate_mu_);
  Bucket& BucketAt(int stripe, int slot) {
    return buckets_storage_[static_cast<size_t>(stripe) * stride_ + slot];
  }
  static int CurrentStripe();

  const int64_t bucket_ns_;
  const int buckets_;
  // Buckets per stripe, rounded up so that stripes never share a cache line.
  const size_t stride_;
  Mutex rotate_mu_;
  // Newest period in the ring. Atomic because Add() and Sum() compare against
  // it without the lock; written only under rotate_mu_.
  std::atomic<int64_t> current_period_;
  std::array<Totals, kStripes> totals_;
  std::unique_ptr<Bucket[]> buckets_storage_;
};

template <typename Pred>
int RollingWindow::TrailingBuckets(absl::Time now, Pred pred) {
  const int64_t period = PeriodOf(now);
  Advance(period);
  int run = 0;
  for (int back = 1; back < buckets_; ++back) {
    const int slot = static_cast<int>((period - back) % buckets_);
    Counts c;
    for (int s = 0; s < kStripes; ++s) {
      Bucket& b = BucketAt(s, slot);
      c.success += b.counts[kSuccess].load(std::memory_order_relaxed);
      c.failure += b.counts[kFailure].load(std::memory_order_relaxed);
      c.rejected += b.counts[kRejected].load(std::memory_order_relaxed);
      c.slow += b.counts[kSlow].load(std::memory_order_relaxed);
    }
    if (!pred(c)) break;
    ++run;
  }
  return run;
}

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_BREAKER_ROLLING_WINDOW_H_
