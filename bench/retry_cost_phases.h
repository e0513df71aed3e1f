// retry_cost_bench's three comparisons, each against a cache_server of its
// own: the success path, failures (the server aborts a share of the Gets),
// and an open breaker's local rejections.

#ifndef GRPC_RESILIENCE_BENCH_RETRY_COST_PHASES_H_
#define GRPC_RESILIENCE_BENCH_RETRY_COST_PHASES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/retry_cost_load.h"
#include "bench/retry_cost_report.h"
#include "bench/retry_cost_server.h"

namespace retry_cost {

struct Environment {
  std::string server_binary;
  const TempDir* temp_dir;
};

// A server whose Gets fail `abort_fraction` of the time, with the keys
// stored.
absl::StatusOr<std::unique_ptr<ServerProcess>> StartServer(const Environment& env,
                                                           absl::string_view name,
                                                           double abort_fraction);

// Every success-path configuration of `caller` (SuccessPathSpecs(), or
// NonBlockingSuccessSpecs()), `load.callers` callers.
absl::StatusOr<Phase> RunSuccessPhase(const Environment& env, const LoadSettings& load,
                                      CallerKind caller = CallerKind::kSync);
// The failure configurations of `caller` (FailureSpecs(), or
// NonBlockingFailureSpecs()), the server aborting `failure_rate` of the Gets;
// CPU per successful call.
absl::StatusOr<Phase> RunFailurePhase(const Environment& env, const LoadSettings& load,
                                      double failure_rate, CallerKind caller = CallerKind::kSync);
// Open breakers' local rejections against a failed round trip.
absl::StatusOr<Phase> RunRejectionPhase(const Environment& env, const LoadSettings& load);

}  // namespace retry_cost

#endif  // GRPC_RESILIENCE_BENCH_RETRY_COST_PHASES_H_
