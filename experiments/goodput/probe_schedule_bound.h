// File: experiments/goodput/probe_schedule_bound.h
//
// How well can any breaker that learns only from its own calls do on the
// outage family? docs/breaker-quality.md ("The 10 calls/s outage target")
// uses this to show that goodput >= 0.99 with waste <= 0.10 at 10 calls/s is
// out of reach, by computing the best possible probe schedule against the
// experiment's real schedules instead of asserting it.
//
// The model. In the outage family every call of a down period fails at once
// and every call of a healthy one succeeds. A breaker that learns only from
// the calls it lets through knows nothing of an outage until its first
// failing call (the detection call, age 0); from then until its first
// success everything it sees is a failure, so what it lets through is a set
// of ages (calls since the detection call): its probe schedule, whatever its
// algorithm (fixed intervals, backoff that grows with the outage's age, a
// share of the offered calls, ...). A probe at an age inside the outage is
// waste; the healthy calls before the first probe after the outage are lost
// goodput. The best breaker of this kind uses the same schedule for every
// outage (the down lengths are independent draws, so what it saw in earlier
// outages says nothing about this one's length).

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_PROBE_SCHEDULE_BOUND_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_PROBE_SCHEDULE_BOUND_H_

#include <cstdint>
#include <vector>

#include "experiments/goodput/goodput.h"

namespace goodput {

// One outage of a scenario, in calls: the calls of its down period (the
// first is the detection call) and of the healthy period after it (0 when
// the run ends in the outage).
struct OutageCalls {
  int64_t down = 0;
  int64_t healthy = 0;
};

// The outages of runs (the outage family: only healthy and down periods, no
// failure latency), and all their healthy calls (the oracle's successes:
// goodput's denominator).
struct OutageSample {
  std::vector<OutageCalls> outages;
  int64_t healthy_calls = 0;
  int64_t down_calls() const;
  // Appends the outages and calls of `scenario`.
  void Add(const Scenario& scenario);
};

// A probe schedule: ascending ages > 0 at which a call is let through
// after the detection call; after the last age every call is.
using ProbeSchedule = std::vector<int64_t>;

// What `schedule` costs on `outages`: probes into the down periods
// (detection calls not included) and healthy calls lost before the first
// probe after each outage (at most the healthy period's calls). An outage
// longer than the last age has a call let through at every age after it.
struct ScheduleCost {
  int64_t probes = 0;
  int64_t lost = 0;
};
ScheduleCost CostOf(const ProbeSchedule& schedule, const OutageSample& sample);

// BestSchedule()
//
// The schedule that minimizes probes + lambda * lost on `outages` among ALL
// schedules (dynamic programming over the age of the last failed probe),
// with its cost.
struct BestSchedule {
  ProbeSchedule schedule;
  ScheduleCost cost;
};
BestSchedule OptimalSchedule(const OutageSample& sample, double lambda);

// RunProbeSchedule()
//
// `schedule` as a breaker on `scenario` (outage family), call by call
// through the experiment's RunRecorder, so its goodput and its counts are
// the experiment's own (waste_ratio is left for the caller, as in
// RunScenario()).
Metrics RunProbeSchedule(const Scenario& scenario, const ProbeSchedule& schedule, uint64_t seed);

// The targets' feasibility on `sample`: goodput >= 1 - max_loss and waste
// <= max_waste need detection + probes <= max_waste * down calls and lost <=
// max_loss * healthy calls. For every lambda >= 0 a schedule that meets both
// has probes + lambda * lost <= (budget of probes) + lambda * (budget of
// lost); when the best schedule's left side is larger for some lambda, none
// meets both. `margin` is the largest (left - right) / down calls found over
// the lambdas tried (> 0: infeasible, by that much waste), at `lambda`.
struct Feasibility {
  int64_t outages = 0;
  int64_t down_calls = 0;
  int64_t healthy_calls = 0;
  int64_t detection_calls = 0;  // one per outage
  double margin = 0;
  double lambda = 0;
  BestSchedule best;  // at `lambda`
};
// With `count_detection` false the detection calls are free (a bound for a
// breaker that somehow needs none).
Feasibility CheckTargets(const OutageSample& sample, double max_waste, double max_loss,
                         bool count_detection);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_PROBE_SCHEDULE_BOUND_H_
