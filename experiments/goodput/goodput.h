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

#include "absl/time/time.h"
#include "grpc_resilience/internal/breaker/breaker.h"
#include "grpc_resilience/internal/core/clock.h"

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
// drops counted, forced pass, recovery acceleration), sre-book (K 2, none of
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

// MakeBreaker()
//
// The breaker of `policy` on `clock` (null for none), as ClientResilience
// builds it from PolicyFileFor(policy) with the same seed.
std::unique_ptr<resilience::Breaker> MakeBreaker(const Policy& policy, resilience::Clock& clock,
                                                 uint64_t seed);

struct Metrics {
  int64_t offered = 0;
  int64_t succeeded = 0;
  int64_t failed = 0;
  int64_t rejected_locally = 0;
  int64_t reached_failing_backend = 0;
  int64_t rejected_while_healthy = 0;
  int64_t oracle_succeeded = 0;
  double goodput_ratio = 0;     // succeeded / oracle_succeeded
  double waste_ratio = 0;       // reached_failing_backend / the same for `none`
  double recovery_seconds = 0;  // mean time from a failing period's end to a success
  // Per second of the run: successes (for the CSV and the chart).
  std::vector<int> successes_per_second;
  std::vector<int> offered_per_second;
};

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
