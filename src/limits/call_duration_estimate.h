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
// calls. Before any call has finished, all that is known is that every call
// started is still running: the first one for `age`. A call that has run for
// `age` is, on a scale-free prior over durations (P(duration > d) ~ 1/d), done
// within `k x age` more with probability k / (k + 1); the estimate is then
// kUnfinishedFactor (3) x age, by when the first call is done with
// probability 3/4. A retrying client told so finds the call still running
// one time in four, and then the next pushback is 4 times as long: gRPC's
// at most 5 attempts span 4^4 = 256 times the first pushback (2.56 s from
// the default minPushback of 10 ms), where pushbacks of the age alone (the
// median) would span 16 times (160 ms), and a fresh server would turn away a
// call that waits for a 300 ms one.
//
// Locking: none; concurrent updates may lose a sample, which only makes the
// mean a little slower to follow. This class is thread-safe.
class CallDurationEstimate {
 public:
  // Started()
  //
  // A call was admitted at `now`, a monotonic time (Clock::Now(), as for
  // Expected()). Only the first one matters.
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
    return kUnfinishedFactor * std::max(absl::ZeroDuration(), now - absl::FromUnixNanos(first));
  }

  static constexpr int kUnfinishedFactor = 3;

 private:
  static constexpr int64_t kNone = INT64_MIN;
  std::atomic<int64_t> first_start_ns_{kNone};
  std::atomic<int64_t> smoothed_ns_{0};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_CALL_DURATION_ESTIMATE_H_
