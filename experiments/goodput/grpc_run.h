// File: experiments/goodput/grpc_run.h
//
// The goodput experiment's gRPC mode: every policy's run goes through a real
// channel with grpc-resilience's client interceptors (the breaker built from
// PolicyFileFor(policy)) to a real CacheServer whose ScheduleFaultInterceptor
// fails calls as the schedule says.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_GRPC_RUN_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_GRPC_RUN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/goodput/goodput.h"

namespace goodput {

// RunOverGrpc()
//
// Runs every policy of `policies` against `schedule` for `length`, one Get
// per millisecond of the schedule, all policies at once (one thread and one
// channel each) against one in-process CacheServer on 127.0.0.1:0. Time is
// the schedule's: each run's breaker reads a SimulatedClock set to the
// call's tick before the call, and the server learns the tick from the
// call's metadata, so the results do not depend on the machine's speed and a
// run of `length` L takes as long as L * 1000 real calls (loopback: about
// 10k to 20k per second on 2 cores). A call is counted as rejected locally
// only when it carries the breaker's x-resilience-local-rejection trailer.
// Returns the metrics in the order of `policies` (waste_ratio left to the
// caller), or an error naming the policy and tick when a call ended in a way
// the schedule does not explain, or when the server's count of calls that
// reached it differs from the client's.
absl::StatusOr<std::vector<Metrics>> RunOverGrpc(const std::vector<Period>& schedule,
                                                 absl::Duration length,
                                                 const std::vector<Policy>& policies,
                                                 uint64_t seed);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_GRPC_RUN_H_
