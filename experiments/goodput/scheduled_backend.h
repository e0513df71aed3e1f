// File: experiments/goodput/scheduled_backend.h
//
// The goodput experiment's backend: what a call at a given millisecond of
// the schedule gets. The simulated mode asks it directly; the gRPC mode asks
// it from a server interceptor (ScheduleFaultInterceptor), so both modes
// meet the same backend.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULED_BACKEND_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULED_BACKEND_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "experiments/goodput/goodput.h"

namespace goodput {

// ScheduledBackend
//
// A call's fate depends only on its tick (milliseconds from the start of the
// run), the seed and, when overloaded, how many calls already reached the
// backend in the same second: down -> UNAVAILABLE; overloaded -> calls beyond
// capacity_per_second in a second get RESOURCE_EXHAUSTED; errors -> a share
// error_rate of the ticks (the same ticks for every policy) get UNAVAILABLE.
// A client that knows the backend's state (the experiment's oracle) sends a
// call exactly when Serve() would succeed: it is a ScheduledBackend of its
// own that every call reaches. One instance per run. Not thread-safe; ticks
// passed to Serve() must not decrease.
class ScheduledBackend {
 public:
  // `schedule` must tile the run from 0 and outlive this object.
  ScheduledBackend(const std::vector<Period>& schedule, uint64_t seed);

  // The period `tick` falls in.
  const Period& PeriodAt(int64_t tick) const {
    return goodput::PeriodAt(schedule_, absl::Milliseconds(tick));
  }

  // Serve()
  //
  // A call at `tick` reached the backend: kOk or the failure it gets.
  absl::StatusCode Serve(int64_t tick);

 private:
  // Calls taken from one second's capacity.
  struct Capacity {
    int64_t second = -1;
    int used = 0;
    bool Take(int64_t tick, int capacity);
  };

  bool ErrorDrawn(const Period& period, int64_t tick) const;

  const std::vector<Period>& schedule_;
  const uint64_t seed_;
  Capacity served_;
};

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULED_BACKEND_H_
