// A test Clock whose two kinds of time disagree: Now() (monotonic) moves
// only with AdvanceTime(), steadily, while WallNow() can also be stepped by
// hand, back or forward, as NTP or an operator steps a real wall clock.
// Code that measures a duration with WallNow() sees the steps; code that
// uses Now() for durations, as it must, does not.

#ifndef GRPC_RESILIENCE_TESTS_CORE_STEPPING_WALL_CLOCK_H_
#define GRPC_RESILIENCE_TESTS_CORE_STEPPING_WALL_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace testing {

// SteppingWallClock
//
// Thread-safe: the offset is an atomic, the monotonic time a SimulatedClock.
class SteppingWallClock final : public Clock {
 public:
  absl::Time Now() override { return monotonic_.Now(); }
  absl::Time WallNow() override {
    return monotonic_.Now() + absl::Nanoseconds(wall_offset_ns_.load(std::memory_order_acquire));
  }

  // AdvanceTime()
  //
  // Moves both kinds forward by `d`, as time passing does.
  void AdvanceTime(absl::Duration d) { monotonic_.AdvanceTime(d); }

  // StepWall()
  //
  // Steps the wall clock alone by `step` (negative: back), as a clock
  // correction does; Now() does not move.
  void StepWall(absl::Duration step) {
    wall_offset_ns_.fetch_add(absl::ToInt64Nanoseconds(step), std::memory_order_acq_rel);
  }

 private:
  SimulatedClock monotonic_;
  std::atomic<int64_t> wall_offset_ns_{0};
};

}  // namespace testing
}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_CORE_STEPPING_WALL_CLOCK_H_
