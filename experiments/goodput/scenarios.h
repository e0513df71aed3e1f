// File: experiments/goodput/scenarios.h
//
// The scenario families of the breaker-quality suite (docs/breaker-quality.md):
// each family is a kind of failure with seeded, jittered period lengths,
// run at several call rates and seeds against the same per-call fates for
// every policy.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCENARIOS_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCENARIOS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/goodput/goodput.h"

namespace goodput {

// The families, in the order the suite prints them:
//   outage    healthy 1-50 s, down 1-20 s (the experiment's own schedule)
//   mixed     healthy 1-50 s, failing 1-20 s: down, overloaded, 20% or 60% errors
//   brownout  healthy 1-50 s, 30% errors 1-20 s (below every threshold we ship)
//   flapping  healthy 1-5 s, down 1-5 s
//   ramp      healthy 10-40 s, then the error rate steps 20, 40, 60, 80, 100,
//             80, 60, 40, 20% (each step 0.5-1.5 s)
//   blip      healthy 5-15 s, down 150-250 ms
//   long      healthy 20-60 s, down 110-130 s
//   slow      the outage schedule, but a failing call is reported 1 s after it
//             started (backend latency 1.5 s, client timeout 1 s)
std::vector<std::string> FamilyNames();

// FamilySchedule()
//
// The schedule of `family` for `length` and `seed`; InvalidArgument for an
// unknown family.
absl::StatusOr<std::vector<Period>> FamilySchedule(const std::string& family,
                                                   absl::Duration length, uint64_t seed);

// MakeScenario()
//
// `family` at `calls_per_second`: its schedule plus the slow family's
// failure latency.
absl::StatusOr<Scenario> MakeScenario(const std::string& family, absl::Duration length,
                                      int calls_per_second, uint64_t seed);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_SCENARIOS_H_
