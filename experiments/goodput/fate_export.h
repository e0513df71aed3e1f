// File: experiments/goodput/fate_export.h
//
// Writes the per-call fates of the suite's scenarios as JSON, so that the
// peers' harness (experiments/peers/, Node) drives other breakers against
// exactly the calls ours meet, and checks itself against our runs.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_FATE_EXPORT_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_FATE_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "experiments/goodput/suite.h"

namespace goodput {

// ExportFates()
//
// For every family, rate and seed of `options`, writes
// DIR/<family>_<rate>_<seed>.json:
//   {"family", "calls_per_second", "seed", "length_ms", "spacing_ms",
//    "failure_latency_ms",
//    "periods": [[start_ms, end_ms, healthy (0/1), capacity_per_second], ...],
//    "fates": one char per call: 'o' succeeds, 'x' fails, 'c' succeeds while
//             its second's capacity (of its period) lasts, counted over the
//             calls that reach the backend,
//    "oracle": one char per call, '1' when the oracle's call succeeds,
//    "reference": {"<policy>": {"per_call": 's'/'f'/'r' per call,
//                  "succeeded", "reached_failing_backend", "goodput_ratio",
//                  "recovery99_seconds", "first_success_seconds"}, ...}}
// with the reference runs of `none` and `recommended`. Errors name the file.
absl::Status ExportFates(const std::string& dir, const SuiteOptions& options);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_FATE_EXPORT_H_
