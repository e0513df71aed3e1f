// File: experiments/overload/worker_queue_simulation.h
//
// The simulated backend of the overload experiment's criticality and tenant
// scenarios: `workers` workers taking admitted calls from one FIFO queue,
// each busy for its call's service time, on a SimulatedClock. The scenario
// decides at each arrival whether the call is admitted (its throttle) and
// hears of each finished call (its figures, the throttle's release).

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_WORKER_QUEUE_SIMULATION_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_WORKER_QUEUE_SIMULATION_H_

#include <cstddef>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "src/core/simulated_clock.h"

namespace overload {

// WorkerQueueSimulation
//
// A discrete-event run of one list of calls. Events are taken in time
// order; a call finishing at the same instant as another arrives is
// finished first, so the arrival finds its worker free. Not thread-safe:
// one run on one thread.
class WorkerQueueSimulation {
 public:
  // When a call arrives (from the start of the run) and how long a worker
  // takes to serve it.
  struct Call {
    absl::Duration arrival;
    absl::Duration service;
  };

  // `workers` >= 1; `clock` is set to each event's time before the scenario
  // hears of it, so limits built on it see the simulated time.
  WorkerQueueSimulation(int workers, resilience::SimulatedClock& clock);

  // Run()
  //
  // Every call of `calls` (arrivals non-decreasing) until the last admitted
  // one is finished. `admit(i)` at call i's arrival: true queues it for a
  // worker, false refuses it (the simulation forgets it).
  // `finish(i, latency)` when its worker is done, `latency` after its
  // arrival (queueing and service).
  void Run(const std::vector<Call>& calls, absl::FunctionRef<bool(size_t)> admit,
           absl::FunctionRef<void(size_t, absl::Duration)> finish);

 private:
  const int workers_;
  resilience::SimulatedClock& clock_;
};

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_WORKER_QUEUE_SIMULATION_H_
