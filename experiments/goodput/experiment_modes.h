// File: experiments/goodput/experiment_modes.h
//
// goodput_experiment's modes other than the schedules' runs: the
// breaker-quality suite (--suite), the probe-schedule bound (--probe_bound)
// and concurrent callers in real time (--mode=live). Each reads its flags
// (experiment_flags.h) and returns the exit status.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_EXPERIMENT_MODES_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_EXPERIMENT_MODES_H_

#include <string>

namespace goodput {

// WriteJson()
//
// The run's JSON to stdout (--json) and to --json_file: the exit status, 1
// when the file cannot be written.
int WriteJson(const std::string& json);

// --suite: the breaker-quality suite (docs/breaker-quality.md).
int RunSuiteMode();

// --probe_bound: experiments/goodput/probe_schedule_bound.h on the outage
// family.
int RunProbeBoundMode();

// --mode=live: concurrent callers in real time (experiments/goodput/live_run.h).
int RunLiveMode();

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_EXPERIMENT_MODES_H_
