// File: experiments/overload/criticality_mix_grpc.h
//
// The criticality mix (criticality_mix.h) over real gRPC: each policy's
// throttle in a real server (AddServerInterceptors, the service behind the
// guard) in front of a BoundedCapacityService, Poisson arrivals with
// deadlines through the async API on loopback, in real time. SHEDDABLE calls
// carry resilience-criticality: SHEDDABLE (SetCriticality()) in the
// honoured run and no header in the ignored one (every call CRITICAL, as a
// client that sets nothing).

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_CRITICALITY_MIX_GRPC_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_CRITICALITY_MIX_GRPC_H_

#include <vector>

#include "absl/status/statusor.h"
#include "experiments/overload/criticality_mix.h"

namespace overload {

// A backend small enough for real time on two cores: 8 workers x 20 ms (C =
// 400 calls/s), a 60 ms deadline, 5 s per run.
MixConfig MixGrpcDefaults();

// RunMixGrpc()
//
// Every policy, honoured then ignored, each with a fresh server. A call the
// load generator reaches more than a deadline late (the process stalled) is
// not sent and not counted; their number is in the notes.
absl::StatusOr<MixResult> RunMixGrpc(const MixConfig& config, const std::vector<Policy>& policies);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_CRITICALITY_MIX_GRPC_H_
