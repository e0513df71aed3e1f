// File: src/core/simulated_clock.h
//
// A Clock that only moves when told to: breaker tests and the goodput
// experiment run whole outages in microseconds of real time with it.
//
// Example:
//   resilience::SimulatedClock clock;          // starts at the Unix epoch + 1 day
//   auto breaker = ThreeStateBreaker::Create(options, clock);
//   clock.AdvanceTime(absl::Seconds(5));       // jump past the open period

#ifndef GRPC_RESILIENCE_SRC_CORE_SIMULATED_CLOCK_H_
#define GRPC_RESILIENCE_SRC_CORE_SIMULATED_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "src/core/clock.h"

namespace resilience {

// SimulatedClock
//
// Time is an atomic count of nanoseconds, so Now() is lock-free and the clock
// can be read from many threads while one test thread advances it. This class
// is thread-safe. Time never goes backwards: SetTime() to an earlier time is
// ignored.
class SimulatedClock final : public Clock {
 public:
  // Starts one day after the Unix epoch, so that "now - window" is never
  // before the epoch.
  SimulatedClock() : SimulatedClock(absl::UnixEpoch() + absl::Hours(24)) {}
  explicit SimulatedClock(absl::Time start)
      : now_ns_(absl::ToUnixNanos(start)) {}

  absl::Time Now() override {
    return absl::FromUnixNanos(now_ns_.load(std::memory_order_acquire));
  }
  // The simulated wall clock is the simulated monotonic one.
  absl::Time WallNow() override { return Now(); }

  // AdvanceTime()
  //
  // Moves the clock forward by `d`. A negative `d` is ignored.
  void AdvanceTime(absl::Duration d) {
    if (d <= absl::ZeroDuration()) return;
    now_ns_.fetch_add(absl::ToInt64Nanoseconds(d), std::memory_order_acq_rel);
  }

  // SetTime()
  //
  // Moves the clock to `t` if `t` is later than now.
  void SetTime(absl::Time t) {
    const int64_t target = absl::ToUnixNanos(t);
    int64_t current = now_ns_.load(std::memory_order_acquire);
    while (current < target &&
           !now_ns_.compare_exchange_weak(current, target,
                                          std::memory_order_acq_rel)) {
    }
  }

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_SIMULATED_CLOCK_H_
