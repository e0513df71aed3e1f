// File: experiments/overload/tenant_mix.h
//
// The per-caller part of the overload experiment: a backend of capacity C
// (as in overload.h: `workers` workers, service time uniform in [0.5, 1.5] x
// `service_time`) shared by `tenants` tenants whose fair share is C /
// tenants each. Every tenant but one offers `quiet_load` x its share,
// Poisson; the noisy one offers `noisy_load` x its share. Each call carries
// its tenant's key (the x-tenant-id header over gRPC) and a deadline, and
// meets a server throttle built from the policy file exactly as the server
// builds it (its concurrency limit and throttle.perCaller). Figures per
// tenant: calls answered OK within their deadline. Each policy runs twice,
// with the noisy tenant and without it (its calls not sent), on the same
// arrivals of the others: the quiet tenants' goodput lost to the noisy one
// is the difference (docs/per-caller-limits.md).
//
// Simulated mode only (a discrete-event simulation on a SimulatedClock,
// seeded).

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/overload/overload.h"

namespace overload {

struct TenantConfig {
  int workers = 16;
  absl::Duration service_time = absl::Milliseconds(16);
  absl::Duration deadline = absl::Milliseconds(50);
  absl::Duration duration = absl::Seconds(10);
  int tenants = 10;          // tenant 0 is the noisy one
  double quiet_load = 0.8;   // x the fair share, each quiet tenant
  double noisy_load = 10.0;  // x the fair share
  uint64_t seed = 1;
};

// The figures of one tenant in one run.
struct TenantResult {
  int64_t offered = 0;
  int64_t rejected = 0;  // by the throttle
  int64_t ok_in_deadline = 0;
  int64_t late = 0;  // admitted, answered past the deadline
};

struct TenantRun {
  std::string policy;
  bool noisy = true;  // false: the noisy tenant sent nothing
  std::vector<TenantResult> tenants;
  // The quiet tenants' calls answered OK within their deadline, per second.
  double quiet_goodput_per_second = 0;
};

struct TenantMixResult {
  TenantConfig config;
  std::vector<TenantRun> runs;  // per policy: with the noisy tenant, then without
  // Per policy: 1 - quiet goodput with / without the noisy tenant.
  std::vector<double> quiet_loss;
};

// A method-wide limit with room for a short queue (2 x workers) alone; the
// same with a per-caller rate limit of the fair share; the same with a
// per-caller concurrency limit of the fair share of the method's limit.
std::vector<Policy> TenantPolicies(const TenantConfig& config);

// RunTenantsSimulated()
//
// Every policy with and without the noisy tenant, on the same seeded
// arrivals and service times. InvalidArgument if a policy does not load or
// the config cannot run.
absl::StatusOr<TenantMixResult> RunTenantsSimulated(const TenantConfig& config,
                                                    const std::vector<Policy>& policies);

// TenantsToJson(), TenantsToTable(): the runs and each tenant's figures.
std::string TenantsToJson(const TenantMixResult& result);
std::string TenantsToTable(const TenantMixResult& result);

// TenantsToSvg()
//
// A bar chart: per policy, the quiet tenants' goodput without and with the
// noisy tenant and the noisy tenant's own, against its fair share.
std::string TenantsToSvg(const TenantMixResult& result, const std::string& title);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_H_
