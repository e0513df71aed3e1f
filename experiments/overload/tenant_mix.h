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
// Simulated mode (RunTenantsSimulated): a discrete-event simulation on a
// SimulatedClock, seeded. The gRPC mode (RunTenantsGrpc,
// tenant_mix_grpc.h) sends the same arrivals with the x-tenant-id header to
// a real server.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
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
  // What the run's figures should be read with (gRPC mode: the machine's
  // load, arrivals the load generator could not send).
  std::vector<std::string> notes;
};

// The header that carries a call's tenant, as the policies key it.
inline constexpr char kTenantHeader[] = "x-tenant-id";

// One call of the scenario: when it arrives (from the start of the run),
// how long a simulated worker serves it, and whose it is (0: the noisy
// tenant).
struct TenantCall {
  absl::Duration arrival;
  absl::Duration service;
  int tenant;
};

// MakeTenantCalls()
//
// Each tenant's Poisson arrivals and service times, from streams of its
// own so that the quiet tenants' calls are the same with and without the
// noisy one, merged in arrival order. Both modes send these.
std::vector<TenantCall> MakeTenantCalls(const TenantConfig& config);

// The key tenant `tenant` sends in kTenantHeader: "tenant-<tenant>".
std::string TenantKey(int tenant);

// InvalidArgument, naming the values, for a config that cannot run.
absl::Status ValidateTenantConfig(const TenantConfig& config);

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

// RunTenantPolicies()
//
// The scenario's frame, whatever runs it: for each policy, `run_one(policy,
// noisy)` with the noisy tenant and then without it, each run's
// quiet_goodput_per_second and the policy's quiet_loss computed from its
// tenants' figures (run_one fills `tenants`, one entry per tenant).
// `run_one`'s error, or InvalidArgument for a config that cannot run.
absl::StatusOr<TenantMixResult> RunTenantPolicies(
    const TenantConfig& config, const std::vector<Policy>& policies,
    absl::FunctionRef<absl::StatusOr<TenantRun>(const Policy& policy, bool noisy)> run_one);

// TenantsToJson(), TenantsToTable(): the runs and each tenant's figures.
std::string TenantsToJson(const TenantMixResult& result);
std::string TenantsToTable(const TenantMixResult& result);

// TenantsToSvg()
//
// A bar chart: per policy, the quiet tenants' goodput without and with the
// noisy tenant and the noisy tenant's own, against its fair share.
std::string TenantsToSvg(const TenantMixResult& result, const std::string& title);

// TenantRepeatsToJson(), TenantRepeatsToTable(), TenantRepeatsToSvg()
//
// The same scenario run several times (over real gRPC each run differs
// with the machine): every repetition's figures and notes in turn, then,
// per policy, the smallest and largest quiet loss over them, and, when
// `simulated` is not null, the simulated mode's figures at the same scale
// to compare with. The chart has one group of bars per policy and
// repetition, labelled "run 2: quiet lose ...". With one repetition and no
// simulated figures, TenantsTo*()'s output.
std::string TenantRepeatsToJson(const std::vector<TenantMixResult>& repeats,
                                const TenantMixResult* simulated);
std::string TenantRepeatsToTable(const std::vector<TenantMixResult>& repeats,
                                 const TenantMixResult* simulated);
std::string TenantRepeatsToSvg(const std::vector<TenantMixResult>& repeats,
                               const std::string& title);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_TENANT_MIX_H_
