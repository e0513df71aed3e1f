// File: experiments/fleet/fleet_simulator.h
//
// The fleet simulator of issue 33: a discrete-event simulation on simulated
// time (a priority queue of events, one SimulatedClock that every breaker
// and limiter reads), seeded and deterministic: the same config, policy and
// seed give the same result, bin for bin.
//
// What runs for real: per client, the library's RetryDecider (with its
// Backoff and the channel's RetryBudget as retryThrottling, or the entry's
// own retryBudget), and the breaker the policy names (CreateBreaker()),
// recorded with BreakerSettings::Classify() as the client chain does, with
// the per-server breakers of breaker.endpoints (EndpointBreakers, on by
// default) gating it as BreakerStage does: an answer names its server, an
// attempt that timed out or was refused names none (gRPC gives no peer
// then); per
// server, the concurrency limiter the policy's throttle names
// (CreateConcurrencyLimiter()), released as ThrottleStage releases it
// (answered: Release(kSuccess, latency); answered past the deadline:
// ReleaseExpired(ran)), and a rejection answered RESOURCE_EXHAUSTED with the
// pushback ThrottleStage sends (the CallDurationEstimate of the
// server's calls, clamped to [min_pushback, max_pushback]).
//
// What is modelled: the network (a fixed one-way delay), the servers (FIFO
// queue, workers, a service time), the triggers (fleet_config.h). The
// hedging decider is not exercised: no configuration compared hedges.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SIMULATOR_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SIMULATOR_H_

#include "absl/status/statusor.h"
#include "experiments/fleet/fleet_config.h"
#include "experiments/fleet/fleet_policy.h"
#include "experiments/fleet/fleet_result.h"

namespace fleet {

// Simulate()
//
// One run of `policy` under `config`, summarized. InvalidArgument when
// Validate(config) fails.
absl::StatusOr<RunResult> Simulate(const Config& config, const FleetPolicy& policy);

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_SIMULATOR_H_
