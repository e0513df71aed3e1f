// File: experiments/overload/criticality_mix.h
//
// The criticality part of the overload experiment: a backend of capacity C
// (as in overload.h: `workers` workers, service time uniform in [0.5, 1.5] x
// `service_time`) offered `load` x C, Poisson, a `critical_fraction` of the
// calls CRITICAL and the rest SHEDDABLE, every call with a deadline, behind a
// server throttle built from the policy file exactly as the server builds it
// (its concurrency limit and criticalityShares). Figures per class: how many
// calls were answered OK within their deadline. Each policy runs twice:
// honouring the calls' criticality, and with every call judged CRITICAL
// (a server that ignores the header: today's behaviour without one).
//
// Simulated mode (RunMixSimulated): a discrete-event simulation on a
// SimulatedClock, seeded. The gRPC mode (RunMixGrpc, criticality_mix_grpc.h)
// sends the same mix with the resilience-criticality header to a real server.

#ifndef GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_CRITICALITY_MIX_H_
#define GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_CRITICALITY_MIX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/overload/overload.h"

namespace overload {

struct MixConfig {
  int workers = 16;
  absl::Duration service_time = absl::Milliseconds(16);
  absl::Duration deadline = absl::Milliseconds(50);
  absl::Duration duration = absl::Seconds(10);
  double load = 3.0;               // offered, x C
  double critical_fraction = 0.2;  // the rest is SHEDDABLE
  uint64_t seed = 1;
};

// The figures of one class (CRITICAL or SHEDDABLE) in one run.
struct ClassResult {
  int64_t offered = 0;
  int64_t rejected = 0;  // by the throttle
  int64_t ok_in_deadline = 0;
  int64_t late = 0;  // admitted, answered past the deadline (or not at all)
  // ok_in_deadline / offered (0 when nothing was offered).
  double ok_fraction() const {
    return offered == 0 ? 0.0 : static_cast<double>(ok_in_deadline) / offered;
  }
};

struct MixRun {
  std::string policy;
  bool honoured = true;  // false: every call judged CRITICAL
  ClassResult critical;
  ClassResult sheddable;
  double goodput_per_second = 0;  // both classes, OK within deadline
};

struct MixResult {
  MixConfig config;
  std::vector<MixRun> runs;  // per policy: honoured, then ignored
  std::vector<std::string> notes;
};

// A limit right for C (maxConcurrency = workers), one with room for a
// queue of one service time (2 x workers), and the adaptive gradient limit.
std::vector<Policy> MixPolicies(const MixConfig& config);

// RunMixSimulated()
//
// Every policy, honouring and ignoring criticality, on the same seeded
// arrivals, classes and service times. InvalidArgument if a policy has no
// concurrency limit or does not load, or the config cannot run.
absl::StatusOr<MixResult> RunMixSimulated(const MixConfig& config,
                                          const std::vector<Policy>& policies);

// MixToJson(), MixToTable(): the runs, one per line / object.
std::string MixToJson(const MixResult& result);
std::string MixToTable(const MixResult& result);

// MixToSvg()
//
// A bar chart: per run (policy, header honoured or ignored), the share of
// CRITICAL and of SHEDDABLE calls answered OK within their deadline, with
// the 99% target marked. `title` heads it.
std::string MixToSvg(const MixResult& result, const std::string& title);

}  // namespace overload

#endif  // GRPC_RESILIENCE_EXPERIMENTS_OVERLOAD_CRITICALITY_MIX_H_
