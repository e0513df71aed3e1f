// File: experiments/overload/simulated_throttle.h
//
// The server throttle of one overload-experiment policy for the simulated
// scenarios: built from the policy file exactly as the server builds it,
// on the simulation's clock.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_SIMULATED_THROTTLE_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_SIMULATED_THROTTLE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "experiments/overload/overload.h"
#include "src/core/clock.h"
#include "src/limits/concurrency_limiter.h"
#include "src/limits/criticality_shares.h"
#include "src/limits/per_caller_limits.h"

namespace overload {

// SimulatedThrottle
//
// The parts of a policy's throttle the simulations drive: the method's
// concurrency limit (fixed or adaptive), its per-caller limits and its
// criticality shares. The scenario admits and releases calls through them
// in the order the throttle interceptor does. Not thread-safe: one
// simulation thread.
struct SimulatedThrottle {
  // Create()
  //
  // The throttle of `policy`'s file (PolicyFileJson()), its limits on
  // `clock`, which must outlive it. InvalidArgument naming the policy if the
  // file does not load or sets no throttle.
  static absl::StatusOr<SimulatedThrottle> Create(const Policy& policy, resilience::Clock& clock);

  std::unique_ptr<resilience::ConcurrencyLimiter> limiter;  // null: none
  std::unique_ptr<resilience::PerCallerLimits> per_caller;  // null: none
  resilience::CriticalityShares shares;
};

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_SIMULATED_THROTTLE_H_
