// File: experiments/goodput/goodput.h
//
// The goodput experiment of seed 000, made reproducible: a client sends one
// call per millisecond to a backend that alternates between healthy and
// failing periods (a seeded schedule, the same for every policy), through a
// circuit breaker of each policy under test, on a simulated clock. Measures
// how much of the success an oracle (a client that knows the backend's
// state) would get each breaker gets, and how many calls it lets through to
// a failing backend.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_GOODPUT_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_GOODPUT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "src/breaker/breaker.h"
#include "src/core/clock.h"

namespace goodput {

// What the backend does during a period.
struct Period {
  enum Kind { kHealthy, kDown, kOverloaded, kErrors };
  Kind kind = kHealthy;
  absl::Duration start;  // from the beginning of the run
  absl::Duration end;
  int capacity_per_second = 0;  // kOverloaded: calls above it fail
  double error_rate = 0;        // kErrors: share of calls that fail
};

std::string KindName(Period::Kind kind);

// PeriodAt()
//
// The period of `schedule` (which tiles the run from 0) that `t` falls in;
// the last one for times past its end.
const Period& PeriodAt(const std::vector<Period>& schedule, absl::Duration t);

// The two schedules. `outage`: go-zero's harness, healthy 1-50 s then down
// 1-20 s, alternating. `mixed`: the failing periods are drawn from down,
// overloaded (300 calls/s), 20% errors and 60% errors.
std::vector<Period> OutageSchedule(absl::Duration length, uint64_t seed);
std::vector<Period> MixedSchedule(absl::Duration length, uint64_t seed);

// A policy under test, written as the policy file's "breaker" object, so
// both modes build its breaker through the policy loader exactly as the
// client interceptors do.
struct Policy {
  std::string key;
  std::string breaker_json;  // empty: no breaker
};

// The policies compared: none, sre-go-zero (K 1.5, protection 5, 10 s / 40,
// drops counted, forced pass, recovery acceleration), sre-default (the same
// without counting drops: SreBreaker's defaults), sre-book (K 2, none of
// go-zero's refinements), three-state-hystrix (10 s / 10, 20 calls, 50 %,
// open 5 s, a probe every 200 ms), recommended (the breaker
// examples/cache_service/policies.json ships for Store).
std::vector<Policy> StandardPolicies();

// The method the experiment calls.
inline constexpr char kMethod[] = "/cache.v1.CacheService/Get";

// PolicyFileFor()
//
// A policy file that gives kMethod the breaker of `policy` and nothing else
// (no retries, no timeouts: the experiment measures breakers).
std::string PolicyFileFor(const Policy& policy);

// CheckPolicy()
//
// Whether the policy loader accepts `policy` (its error, naming the field,
// when not).
absl::Status CheckPolicy(const Policy& policy);

// MakeBreaker()
//
// The breaker of `policy` on `clock` (null for none), as ClientResilience
// builds it from PolicyFileFor(policy) with the same seed.
std::unique_ptr<resilience::Breaker> MakeBreaker(const Policy& policy, resilience::Clock& clock,
                                                 uint64_t seed);

// WithRecoveryProbe()
//
// `policy` (a three-state breaker) with breaker.recoveryProbe at `interval`,
// keyed "<key>+probes": its open breaker learns recovery from health probes
// (RunScenario() simulates them), not from user calls.
Policy WithRecoveryProbe(const Policy& policy, absl::Duration interval);

struct Metrics {
  int64_t offered = 0;
  // Health probes sent (breaker.recoveryProbe); never counted as calls.
  int64_t probes = 0;
  int64_t succeeded = 0;
  int64_t failed = 0;
  int64_t rejected_locally = 0;
  int64_t reached_failing_backend = 0;
  int64_t rejected_while_healthy = 0;
  int64_t oracle_succeeded = 0;
  // gRPC mode: calls that did not succeed but were answered by Get's
  // fallback from the client's copy (a stale read; counted in failed or
  // rejected_locally as well).
  int64_t answered_stale = 0;
  double goodput_ratio = 0;     // succeeded / oracle_succeeded
  double waste_ratio = 0;       // reached_failing_backend / the same for `none`
  // Per failing period followed by a healthy one (an "outage"), in seconds
  // from its end: to the first success, and until the success rate is back
  // to >= 99% of the oracle's for good (RecoveryTimes() in run_recorder.h
  // defines the windows); censored at the healthy period's length.
  std::vector<double> first_success_per_outage;
  std::vector<double> recovery99_per_outage;
  double first_success_seconds = 0;      // mean of first_success_per_outage
  double first_success_max_seconds = 0;  // max
  double recovery99_seconds = 0;         // mean of recovery99_per_outage
  double recovery99_max_seconds = 0;     // max
  // Per call, in order: 's' succeeded, 'f' failed, 'r' rejected locally
  // (for the peers' cross-check, experiments/peers/).
  std::string per_call;
  // Per second of the run: successes (for the CSV and the chart).
  std::vector<int> successes_per_second;
  std::vector<int> offered_per_second;

  // Fills the means and maxima from the per-outage lists.
  void SummarizeRecoveries();
  // Adds the counts and per-outage lists of `other` (another seed of the
  // same scenario and policy) and recomputes the ratios; the per-second
  // series are not merged.
  void Merge(const Metrics& other);
};

// A scenario: a schedule, its length, the rate of the calls and when a
// failure reaches the caller.
struct Scenario {
  std::vector<Period> schedule;
  absl::Duration length;
  // Calls per second, evenly spaced; 1000 / calls_per_second must be a whole
  // number of milliseconds (1000, 500, 100, 10, ...).
  int calls_per_second = 1000;
  // A call that fails is reported this long after it started (a slow
  // backend whose failures arrive one client timeout late); successes are
  // reported at once. Zero: failures at once too.
  absl::Duration failure_latency = absl::ZeroDuration();
};

// RunScenario()
//
// RunSimulated() generalized to `scenario`'s rate and failure latency: the
// breaker's clock is set to each call's start for Allow() and to its end for
// Record(); outcomes arriving late are delivered, in order, before the calls
// that start after them.
Metrics RunScenario(const Scenario& scenario, const Policy& policy, uint64_t seed);

// RunSimulated()
//
// Runs `policy` against `schedule` for `length`, one call per ms of
// simulated time, straight into the breaker and a ScheduledBackend. The
// backend's draws depend only on `seed` and the call's tick, so every policy
// meets the same backend. waste_ratio is left for the caller (it needs
// `none`): see SetWasteRatios().
Metrics RunSimulated(const std::vector<Period>& schedule, absl::Duration length,
                     const Policy& policy, uint64_t seed);

// SetWasteRatios()
//
// Fills waste_ratio of every run from the run of `none` (results[none]).
void SetWasteRatios(std::vector<Metrics>& results, size_t none);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_GOODPUT_H_
