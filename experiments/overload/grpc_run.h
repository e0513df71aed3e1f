// File: experiments/overload/grpc_run.h
//
// The overload experiment over real gRPC: each policy's throttle in a real
// server (AddServerInterceptors, the service behind the guard) in front of a
// BoundedCapacityService, clients sending Poisson arrivals with deadlines
// through the async API on loopback, in real time. The same phases, policies
// and results as the simulated mode (overload.h).

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_GRPC_RUN_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_GRPC_RUN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "experiments/overload/overload.h"

namespace overload {

// A backend small enough for real time on two cores: 8 workers x 20 ms (C =
// 400 calls/s), a 60 ms deadline, 2 s phases.
Config GrpcDefaults();

// RunGrpc()
//
// Every policy through the whole run, one after the other, each with a
// fresh server and channel (about 12 x phase_length per policy, plus the
// unloaded run of 3 s). The latency of an admitted call is the client's:
// send to answer, at most the deadline (a call past it ends then).
// Arrivals the load generator reaches more than a deadline late (the process
// stalled) are not sent but counted (PhaseResult::unsent); a policy's run
// with more than 1% of a phase's arrivals unsent is made again, three runs
// at most, each discarded run noted in Result::notes.
// InvalidArgument if a policy does not load, Unavailable if a server cannot
// start.
absl::StatusOr<Result> RunGrpc(const Config& config, const std::vector<Policy>& policies);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_GRPC_RUN_H_
