// File: src/limits/call_duration_estimate.h
//
// How long the calls of one scope take, for the pushback a throttle suggests
// when it rejects a call: by then, the calls running now are expected to have
// finished.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_CALL_DURATION_ESTIMATE_H_
#define GRPC_RESILIENCE_SRC_LIMITS_CALL_DURATION_ESTIMATE_H_

#include <atomic>
#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace resilience {

// CallDurationEstimate
//
// An exponentially smoothed mean (weight 1/8) of the durations of finished
// calls. Before any call has finished, the estimate is the age of the first
// call started: every call started is still running, so calls take at least
// that long (never a made-up small number on a scope that is saturated from
// its first call on).
//
// Locking: none; concurrent updates may lose a sample, which only makes the
// mean a little slower to follow. This class is thread-safe.
class CallDurationEstimate {
 public:
  // Started()
  //
  // A call was admitted at `now`. Only the first one matters.
  void Started(absl::Time now) {
    // A plain load first: after the first call, no write to a shared line.
    if (first_start_ns_.load(std::memory_order_relaxed) != kNone) return;
    int64_t expected = kNone;
    first_start_ns_.compare_exchange_strong(expected, absl::ToUnixNanos(now),
                                            std::memory_order_relaxed);
  }

  // Finished()
  //
  // A call that took `duration` has finished.
  void Finished(absl::Duration duration) {
    const int64_t sample = std::max<int64_t>(1, absl::ToInt64Nanoseconds(duration));
    const int64_t old = smoothed_ns_.load(std::memory_order_relaxed);
    smoothed_ns_.store(old == 0 ? sample : old + (sample - old) / 8, std::memory_order_relaxed);
  }

  // Expected()
  //
  // The expected duration of a call at `now`; zero if no call has started.
  absl::Duration Expected(absl::Time now) const {
    const int64_t smoothed = smoothed_ns_.load(std::memory_order_relaxed);
    if (smoothed > 0) return absl::Nanoseconds(smoothed);
    const int64_t first = first_start_ns_.load(std::memory_order_relaxed);
    if (first == kNone) return absl::ZeroDuration();
    return std::max(absl::ZeroDuration(), now - absl::FromUnixNanos(first));
  }

 private:
  static constexpr int64_t kNone = INT64_MIN;
  std::atomic<int64_t> first_start_ns_{kNone};
  std::atomic<int64_t> smoothed_ns_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_CALL_DURATION_ESTIMATE_H_
