// File: src/metrics/latency_histogram.cc

#include "src/metrics/latency_histogram.h"

#include <algorithm>
#include <limits>

namespace resilience {
namespace {

constexpr std::array<double, LatencyHistogram::kNumBounds> kBoundsSeconds = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

// The same bounds in nanoseconds, padded to 16 with values no latency
// exceeds, for the branch-free search below.
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr std::array<int64_t, 16> kBoundsNanos = {
    500'000,       1'000'000,      2'500'000,   5'000'000,   10'000'000,    25'000'000,
    50'000'000,    100'000'000,    250'000'000, 500'000'000, 1'000'000'000, 2'500'000'000,
    5'000'000'000, 10'000'000'000, kNever,      kNever};

constexpr bool BoundsAgree() {
  for (size_t i = 0; i < LatencyHistogram::kNumBounds; ++i) {
    const double nanos = kBoundsSeconds[i] * 1e9;
    const double diff = nanos - static_cast<double>(kBoundsNanos[i]);
    if (diff > 1e-6 || diff < -1e-6) return false;
    if (i > 0 && kBoundsNanos[i] <= kBoundsNanos[i - 1]) return false;
  }
  return true;
}
static_assert(BoundsAgree(), "kBoundsNanos must be kBoundsSeconds in nanoseconds, ascending");

// Observations above a day add a day to the sum.
constexpr int64_t kMaxSummedNanos = int64_t{86400} * 1'000'000'000;

}  // namespace

absl::Span<const double> LatencyHistogramSnapshot::UpperBounds() { return kBoundsSeconds; }

size_t LatencyHistogram::BucketIndex(int64_t nanoseconds) {
  // The number of bounds below `nanoseconds`, found bit by bit (8, 4, 2, 1):
  // four comparisons the compiler turns into conditional moves. Invariant:
  // the first `i` bounds are all below. The padding is never below, so the
  // result is at most kNumBounds.
  size_t i = 0;
  for (size_t step = 8; step > 0; step >>= 1) {
    i += kBoundsNanos[i + step - 1] < nanoseconds ? step : 0;
  }
  return i;
}

void LatencyHistogram::Observe(absl::Duration latency) {
  // Saturates: an infinite latency is kNever and lands above every bound.
  const int64_t nanos = std::max<int64_t>(absl::ToInt64Nanoseconds(latency), 0);
  buckets_[BucketIndex(nanos)].fetch_add(1, std::memory_order_relaxed);
  const int64_t summed = std::min(nanos, kMaxSummedNanos);
  sum_micros_.fetch_add(static_cast<uint64_t>((summed + 500) / 1000), std::memory_order_relaxed);
}

LatencyHistogramSnapshot LatencyHistogram::Snapshot() const {
  LatencyHistogramSnapshot snapshot;
  for (size_t i = 0; i < kNumBuckets; ++i) {
    snapshot.bucket_counts[i] = buckets_[i].load(std::memory_order_relaxed);
    snapshot.count += snapshot.bucket_counts[i];
  }
  snapshot.sum_seconds = static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
  return snapshot;
}

}  // namespace resilience
