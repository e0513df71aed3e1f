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
// would have got at the same ticks and, for every failing period followed by
// a healthy one, the two recovery times of Metrics (see RecoveryTimes()).
// Not thread-safe.
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
  struct Call {
    int64_t tick;
    bool succeeded;         // this run's call succeeded
    bool oracle_succeeded;  // the oracle's call at the same tick would have
    bool rejected;          // rejected locally
  };

  // Counts the call as offered; returns its period.
  const Period& Offer(int64_t tick, bool succeeded);

  const std::vector<Period>& schedule_;
  // The oracle: a backend that every call reaches (see ScheduledBackend).
  ScheduledBackend oracle_;
  Metrics metrics_;
  std::vector<Call> calls_;
};

// RecoveryTimes()
//
// The recovery after the failing period that ends at `healthy.start`, from
// the calls (in tick order) of the healthy period that follows it, measured
// from the period's first call (at low rates it comes up to one call spacing
// after the period's start, for the oracle too):
//   first_success: to the first success;
//   back_to_99: to the first call from which on
//     every window of consecutive calls holds at least 99% of the oracle's
//     successes in the same window. A window is `window_calls` calls; the
//     windows checked are those that fit in the period (one window of the
//     whole period when it holds fewer calls).
// Both are the period's length when never reached (censored).
struct Recovery {
  absl::Duration first_success;
  absl::Duration back_to_99;
};
Recovery RecoveryTimes(const Period& healthy, const std::vector<int64_t>& ticks,
                       const std::vector<bool>& succeeded,
                       const std::vector<bool>& oracle_succeeded, int64_t window_calls);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_RUN_RECORDER_H_
