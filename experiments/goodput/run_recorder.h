// File: experiments/goodput/run_recorder.h
//
// Turns the calls of one run (one policy against one schedule) into the
// experiment's Metrics, the same way in both modes.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_RUN_RECORDER_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_RUN_RECORDER_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "experiments/goodput/goodput.h"
#include "experiments/goodput/scheduled_backend.h"

namespace goodput {

// RunRecorder
//
// Every call of the run is reported once, in tick order, as rejected locally
// or as having reached the backend. The recorder counts what the oracle
// would have got at the same ticks and the recovery time after each failing
// period. Not thread-safe.
class RunRecorder {
 public:
  // `schedule` must outlive the recorder.
  RunRecorder(const std::vector<Period>& schedule, absl::Duration length, uint64_t seed);

  void RejectedLocally(int64_t tick);
  void Reached(int64_t tick, bool succeeded);

  // Finish()
  //
  // The totals so far; waste_ratio is left for the caller (it needs `none`).
  Metrics Finish() const;

 private:
  // Counts the call as offered; returns its period.
  const Period& Offer(int64_t tick);

  // The oracle: a backend that every call reaches (see ScheduledBackend).
  ScheduledBackend oracle_;
  Metrics metrics_;
  // The end of the last failing period, until the first success after it.
  absl::Duration waiting_since_ = absl::InfiniteDuration();
  const Period* previous_ = nullptr;
  absl::Duration recovery_total_;
  int recoveries_ = 0;
};

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_RUN_RECORDER_H_
