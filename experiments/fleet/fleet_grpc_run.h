// File: experiments/fleet/fleet_grpc_run.h
//
// The fleet simulator's small case over real gRPC, to check the model
// against reality (issue 33, item 4): `servers` in-process gRPC servers on
// loopback ports, each a BoundedCapacityService (`workers` worker threads, a
// service time uniform in [0.5, 1.5] x `service_time`, a FIFO queue, every
// admitted call run to its end whether or not its client still waits: the
// simulator's server), behind the server interceptors of the policy's
// server file; `clients` real channels, each made by CreateResilientChannel()
// from the policy's client file (the library's whole client chain: retry,
// budgets, breaker and per-endpoint breakers) with round_robin over the
// servers; open-loop Poisson arrivals at `load` x C, each to a random
// client, sent with the async API in real time.
//
// Measured as the simulator measures (RunResult, Summarize()): calls by the
// 0.5 s bin they arrived in, succeeded when OK within the call's timeout;
// attempts sent to a server, and attempts refused by the clients' breakers,
// from the channels' counters, read at every bin boundary.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_GRPC_RUN_H_
#define GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_GRPC_RUN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "experiments/fleet/fleet_config.h"
#include "experiments/fleet/fleet_policy.h"
#include "experiments/fleet/fleet_result.h"

namespace fleet {

// What the real run measured, and how well the machine kept up.
struct GrpcRun {
  RunResult result;
  // Arrivals the load generator sent more than 20 ms after their time (the
  // process did not get a core), and the worst lateness.
  int64_t late_arrivals = 0;
  double max_lateness_ms = 0;
  // Latency of the calls that succeeded before the trigger (2 s into the run
  // to 2.5 s before the trigger), ms: the simulator's is the service time
  // (uniform in [0.5, 1.5] x service_time) plus queueing and 1 ms of
  // network; more here is this machine's CPU (threads waiting for a core).
  double baseline_p50_ms = 0;
  double baseline_p99_ms = 0;
};

// RunOverGrpc()
//
// One run of `policy` under `config` in real time (RunLength(config) plus up
// to the call timeout for the last calls). Triggers: kNone and
// kCapacityHalf (every server's service time doubled: SetSlowdown(2));
// InvalidArgument for the others, and for a policy without a client file.
// Unavailable when a server does not start.
absl::StatusOr<GrpcRun> RunOverGrpc(const Config& config, const FleetPolicy& policy);

}  // namespace fleet

#endif  // GRPC_RESILIENCE_EXPERIMENTS_FLEET_FLEET_GRPC_RUN_H_
