// File: experiments/overload/tenant_mix_grpc.h
//
// The tenant mix (tenant_mix.h) over real gRPC: each policy's throttle in a
// real server (AddServerInterceptors, the service behind the guard) in front
// of a BoundedCapacityService, the arrivals of MakeTenantCalls sent in real
// time through the async API on loopback, each call with its tenant's key in
// the x-tenant-id header and a deadline. Each policy runs with the noisy
// tenant and without it (its arrivals not sent), each run with a fresh
// server; the figures are the client's.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_GRPC_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_GRPC_H_

#include <vector>

#include "absl/status/statusor.h"
#include "experiments/overload/tenant_mix.h"

namespace overload {

// A backend small enough for real time on two cores: 8 workers x 40 ms (C =
// 200 calls/s, a fair share of 20/s), a 120 ms deadline (3 service times,
// as the simulated 50 ms for 16 ms), 5 s per run: 6 runs, about 35 s.
TenantConfig TenantGrpcDefaults();

// RunTenantsGrpc()
//
// Every policy with and without the noisy tenant, in real time. Arrivals the
// load generator reaches more than a deadline late (the process stalled)
// are not sent and not counted as offered; a run with more than 1% of its
// arrivals unsent (and more than 5) measured the machine, not the policy,
// and is made again, three attempts at most. The notes say so, give the
// unsent arrivals of every run kept, and the machine's load averages
// (/proc/loadavg) before and after. InvalidArgument for a config that
// cannot run or a policy that does not load; the server's error if one
// cannot start.
absl::StatusOr<TenantMixResult> RunTenantsGrpc(const TenantConfig& config,
                                               const std::vector<Policy>& policies);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_GRPC_H_
