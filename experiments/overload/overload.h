// File: experiments/overload/overload.h
//
// The overload experiment of issue 19: server-side concurrency limits in
// front of a backend of bounded capacity (N workers, each call taking a
// service time), while the capacity changes (C, then C/2, then 2C) and the
// offered load steps from 0.5C to 5C. Clients send open-loop (Poisson) and
// give every call a deadline; a rejected call is answered at once and not
// retried. The backend runs every call it is handed to its end (as a handler
// that never checks its deadline does), so calls queued past their deadline
// are wasted work.
//
// Each policy is the policy file's "throttle" object (or none), built
// through the policy loader and CreateConcurrencyLimiter() exactly as the
// server builds it; the adaptive one is `{"adaptive": {}}`, all defaults.
//
// Simulated mode (RunSimulated): a discrete-event simulation on a
// SimulatedClock, seeded, a few hundred ms of real time.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_OVERLOAD_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_OVERLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace overload {

struct Config {
  // The backend at capacity C: `workers` workers, each call taking a
  // service time uniform in [0.5, 1.5] x `service_time` (C = workers /
  // service_time calls per second).
  int workers = 16;
  absl::Duration service_time = absl::Milliseconds(16);
  // The clients' deadline on every call.
  absl::Duration deadline = absl::Milliseconds(50);
  // Every (load, capacity) pair is a phase of this length, loads outer:
  // for each load, the capacity goes C, C/2, 2C. Both are factors of C.
  absl::Duration phase_length = absl::Seconds(4);
  std::vector<double> loads = {0.5, 1, 2, 5};
  std::vector<double> capacities = {1, 0.5, 2};
  uint64_t seed = 1;
  // gRPC mode, for tests: the load generator pauses once for `pause_for`,
  // `pause_at` into each run (as it would in a process that got no CPU).
  absl::Duration pause_at = absl::InfiniteDuration();
  absl::Duration pause_for = absl::ZeroDuration();
};

// A policy under test: its name and the policy file's "throttle" object
// ("" = no throttle).
struct Policy {
  std::string name;
  std::string throttle_json;
};

// none, fixed limits right for C, 2x too high and 2x too low, the adaptive
// gradient limit with its defaults, and AIMD with its defaults.
std::vector<Policy> DefaultPolicies(const Config& config);

// One phase of one policy. Calls are attributed to the phase they arrived
// in.
struct PhaseResult {
  std::string policy;
  int phase = 0;
  double load = 0;      // offered load, x C
  double capacity = 0;  // backend capacity, x C
  double offered_per_second = 0;
  // Calls that completed within their deadline, per second.
  double goodput_per_second = 0;
  int64_t offered = 0;
  int64_t admitted = 0;
  int64_t rejected = 0;
  int64_t completed_in_deadline = 0;
  int64_t expired = 0;  // admitted, completed past the deadline (or not by the end)
  // gRPC mode: arrivals the load generator reached more than a deadline
  // after their time (the process or the machine stalled) and did not send;
  // counted in `offered`. Always 0 in the simulated mode.
  int64_t unsent = 0;
  // Latency (admission to completion) of the admitted calls of the phase,
  // and of those admitted once the phase had run 2 s, or half of it if
  // shorter (settled).
  double p50_ms = 0;
  double p99_ms = 0;
  double settled_p99_ms = 0;
  // Where the limit stood: mean over the phase (0 without a limit).
  double mean_limit = 0;
  // After a capacity change at the start of this phase: how long until the
  // limit stayed within 25% of where it settled (its median over the second
  // half of the phase), baseline measurements excepted; 0 for a limit that
  // does not move; -1 where there is no limit or no change.
  double converge_seconds = -1;
};

struct Result {
  Config config;
  // p99 latency of the backend at 0.1 C without any limit.
  double unloaded_p99_ms = 0;
  std::vector<PhaseResult> phases;  // phase-major, then policy in the given order
  // Per policy, in the given order: calls within deadline per second over
  // the whole run.
  std::vector<std::pair<std::string, double>> total_goodput;
  // What the reader must know about how the figures were made (gRPC mode:
  // runs discarded because the load generator stalled).
  std::vector<std::string> notes;
};

// Shared by the simulated and the gRPC mode.

// The policy file of `policy`: its throttle for every method ({} for none).
std::string PolicyFileJson(const Policy& policy);

// The `q`-quantile of `v` (reordered), 0 for an empty one.
double Percentile(std::vector<double>& v, double q);

// The opening of the scenarios' SVG charts: a `width` x `height` white
// canvas, sans-serif 12, with `title` at (`left`, 24) in 14. The caller
// draws the rest and closes it with </svg>.
std::string SvgOpening(int width, int height, int left, const std::string& title);

// The phases of `config`, empty, named and numbered, for `policy`.
std::vector<PhaseResult> EmptyPhases(const Config& config, const std::string& policy);

// Where the limit stood at `at` (from the start of the run); `measuring`: a
// baseline measurement had it pinned.
struct LimitSample {
  absl::Duration at;
  int64_t limit;
  bool measuring;
};

// Summarize()
//
// Fills in the rates, percentiles, mean limit and convergence of `phases`
// (whose counts are set) from the latencies of each phase's admitted calls
// (all, and settled) and the limit samples. Reorders the latency vectors.
void Summarize(const Config& config, bool has_limit, const std::vector<LimitSample>& samples,
               std::vector<std::vector<double>>& latencies,
               std::vector<std::vector<double>>& settled, std::vector<PhaseResult>& phases);

// ValidateConfig()
//
// InvalidArgument when `config` cannot be run in either mode: no loads or
// capacities, no worker, or a service time or phase length that is not
// positive.
absl::Status ValidateConfig(const Config& config);

// RunSimulated()
//
// Every policy through the whole run on its own simulated clock, the same
// seeded arrivals and service times for all. InvalidArgument if a policy's
// throttle does not load.
absl::StatusOr<Result> RunSimulated(const Config& config, const std::vector<Policy>& policies);

// ToJson()
//
// {"config": {...}, "unloaded_p99_ms": ..., "phases": [{one object per
// phase and policy}], "total_goodput_per_second": {"policy": ...}}.
std::string ToJson(const Result& result);

// ToCsv()
//
// One line per phase: "phase,label,<goodput of each policy>", with a
// header naming the policies; the label is "<load>C@<capacity>C".
std::string ToCsv(const Result& result);

// ToTable()
//
// One line per phase and policy, then the totals.
std::string ToTable(const Result& result);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_OVERLOAD_H_
