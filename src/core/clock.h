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
// A source of the current time. Implementations must be thread-safe. The real
// clock is wall-clock time and may step (NTP); users must tolerate a `Now()`
// earlier than a previous one.
class Clock {
 public:
  virtual ~Clock() = default;

  // Now()
  //
  // The current time.
  virtual absl::Time Now() = 0;

  // Real()
  //
  // The process-wide real clock (CLOCK_REALTIME). Never destroyed.
  static Clock& Real();
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_CLOCK_H_
