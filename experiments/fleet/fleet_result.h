// File: experiments/fleet/fleet_result.h
//
// What one run of the fleet simulator measured: per time bin, the calls
// offered and how they ended, the attempts sent; and the run's summary:
// amplification, recovery after the trigger.
//
// Calls are attributed to the bin they arrived in, attempts to the bin they
// were sent in (an attempt a breaker refused is not sent).

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_RESULT_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_RESULT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/fleet/fleet_config.h"

namespace fleet {

struct Bin {
  int64_t offered = 0;    // calls that arrived
  int64_t succeeded = 0;  // of those, calls that succeeded within their deadline
  int64_t attempts = 0;   // attempts sent to a server
  int64_t rejected_by_server = 0;  // of those, rejected by a server's limit
  int64_t refused_locally = 0;     // attempts a client's breaker refused
  int64_t wasted = 0;     // work completed for an attempt nobody waited for (by completion)
};

struct RunResult {
  std::string policy;
  Config config;
  std::vector<Bin> bins;
  // Success fraction (succeeded / offered) over the bins from 2 s into the
  // run to 2.5 s before the trigger's start (a call lasts up to 2 s).
  double baseline = 0;
  // Recovery: the first bin starting at or after the trigger's end from
  // which every bin to the end of the run has a success fraction >= 0.95 x
  // baseline; its start minus the trigger's end (0 when the fleet never
  // fell below). Not recovered: no such bin (metastable for this run).
  bool recovered = false;
  double recovery_seconds = -1;
  // Attempts sent per call offered: over the whole run; from the trigger's
  // start to 10 s past its end (`window`); during the trigger; and the
  // highest bin.
  double amplification = 0;
  double window_amplification = 0;
  // Over the trigger's span only.
  double trigger_amplification = 0;
  double peak_amplification = 0;
  // Success fraction over the same window, and over the last 10 s.
  double window_goodput = 0;
  double final_goodput = 0;
  // Events processed, and real seconds the run took.
  int64_t events = 0;
  double wall_seconds = 0;
};

// Fills the summary of `result` from its bins and config.
void Summarize(RunResult& result);

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_RESULT_H_
