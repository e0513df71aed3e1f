// File: src/core/clock.h
//
// The time source of every time-dependent class in grpc-resilience. Abseil
// 20220623 (Debian 12) has no clock interface, so this is the same shape as
// absl::Clock / Envoy's TimeSource: code that needs "now" takes a `Clock&`
// instead of calling absl::Now(), and tests pass a SimulatedClock
// (src/core/simulated_clock.h) that they move by hand.

#ifndef GRPC_RESILIENCE_SRC_CORE_CLOCK_H_
#define GRPC_RESILIENCE_SRC_CORE_CLOCK_H_

#include "absl/time/time.h"

namespace resilience {

// Clock
//
// A source of the current time, in two kinds. Implementations must be
// thread-safe.
//
//   - Now(): monotonic time, for every duration, latency, window and rate.
//     It never steps back; its absl::Time values count from an arbitrary
//     origin (the real clock: CLOCK_MONOTONIC, i.e. since boot), so they
//     are only ever subtracted from one another or compared with one
//     another, never with a wall-clock time such as a gRPC deadline.
//   - WallNow(): wall-clock time (CLOCK_REALTIME), only for deadlines, which
//     gRPC expresses in wall time. It may step (NTP).
//
// A SimulatedClock moves both together.
class Clock {
 public:
  virtual ~Clock() = default;

  // Now()
  //
  // The current monotonic time.
  virtual absl::Time Now() = 0;

  // WallNow()
  //
  // The current wall-clock time, for deadlines.
  virtual absl::Time WallNow() = 0;

  // Real()
  //
  // The process-wide real clock. Never destroyed.
  static Clock& Real();
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_CLOCK_H_
