// File: experiments/fleet/fleet_report.h
//
// The fleet simulator's report: a table per run, the metastability boundary
// (the lowest offered load at which a configuration did not recover) per
// trigger and configuration, JSON, and the time series as CSV.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_REPORT_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_REPORT_H_

#include <string>
#include <vector>

#include "experiments/fleet/fleet_result.h"

namespace fleet {

// One line per run: trigger, policy, load, baseline, recovered, recovery
// time, amplification (window, peak, whole run), goodput in the window.
std::string ToTable(const std::vector<RunResult>& runs);

// Per trigger and policy, in the runs' order: the lowest load that did not
// recover ("-" when all did), and the worst recovery time among the loads
// that did, up to `max_load`.
std::string BoundaryTable(const std::vector<RunResult>& runs, double max_load);

// {"runs": [{summary of each run, "goodput": [success fraction per bin],
// "amplification": [attempts per call per bin]}]}.
std::string ToJson(const std::vector<RunResult>& runs);

// "t,<policy>..." : success fraction per bin of each run (all runs of the
// same config and trigger, one column each).
std::string SeriesCsv(const std::vector<const RunResult*>& runs);

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_REPORT_H_
