// File: experiments/goodput/scheduled_faults.h
//
// The server side of the goodput experiment's gRPC mode: one
// ScheduledBackend per run (policy), shared by the calls of all runs, which
// the clients name in metadata.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULED_FAULTS_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULED_FAULTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "experiments/goodput/goodput.h"
#include "experiments/goodput/scheduled_backend.h"
#include "src/core/mutex.h"

namespace goodput {

// Metadata a client of the gRPC mode sends with each call: the run (the
// policy's key) and the call's tick (milliseconds from the run's start).
inline constexpr char kRunMetadataKey[] = "x-goodput-run";
inline constexpr char kTickMetadataKey[] = "x-goodput-tick";

// ScheduledFaults
//
// Decides each call's fate with the run's own ScheduledBackend (so a run's
// overload capacity is not eaten by another run's calls) and counts what
// reached the backend per run. This class is thread-safe; the calls of one
// run must arrive in tick order.
class ScheduledFaults {
 public:
  // `schedule` must outlive this object.
  ScheduledFaults(const std::vector<Period>& schedule, uint64_t seed);

  // Serve()
  //
  // The fate of `run`'s call at `tick`: kOk or the failure it gets.
  absl::StatusCode Serve(absl::string_view run, int64_t tick);

  struct Counts {
    int64_t served = 0;           // calls that reached the backend
    int64_t served_failing = 0;   // ... during a failing period
    int64_t failed = 0;           // ... and got a failure
  };
  Counts CountsOf(absl::string_view run);

 private:
  struct Run {
    explicit Run(const std::vector<Period>& schedule, uint64_t seed) : backend(schedule, seed) {}
    ScheduledBackend backend;
    Counts counts;
  };

  const std::vector<Period>& schedule_;
  const uint64_t seed_;
  resilience::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Run>> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCHEDULED_FAULTS_H_
