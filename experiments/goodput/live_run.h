// File: experiments/goodput/live_run.h
//
// The goodput experiment's live mode: several concurrent callers per policy
// in real time, through the real client interceptors on the real clock, to a
// CacheServer whose calls take real time (a server-side fault-injection
// delay) and fail as a compressed outage schedule says. Outcomes arrive late
// and out of order, as in production; the run shows whether the breakers'
// decisions hold then (docs/breaker-quality.md, "Live mode").

#ifndef GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_LIVE_RUN_H_
#define GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_LIVE_RUN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "experiments/goodput/goodput.h"

namespace goodput {

struct LiveOptions {
  absl::Duration length = absl::Seconds(60);
  int callers = 4;                 // concurrent callers per policy
  int calls_per_second = 50;       // per caller
  absl::Duration latency = absl::Milliseconds(2);  // every call, on the server
  uint64_t seed = 1;
};

// LiveSchedule()
//
// The outage family compressed for a minute: healthy 2-8 s, down 1-4 s.
std::vector<Period> LiveSchedule(absl::Duration length, uint64_t seed);

// RunLive()
//
// Every policy at once, each with its own channel and `callers` threads that
// each start a Get every 1 / calls_per_second s of real time (a caller whose
// call takes longer starts the next at once). A call's tick is its start in
// ms of real time since the run began; the server fails it by that tick.
// Calls are sorted by tick before they are counted, so the metrics are those
// of the other modes (waste_ratio left to the caller). Fails, naming the
// policy, when a call ends in a way the schedule does not explain or the
// server's counts differ from the client's.
absl::StatusOr<std::vector<Metrics>> RunLive(const std::vector<Period>& schedule,
                                             const std::vector<Policy>& policies,
                                             const LiveOptions& options);

}  // namespace goodput

#endif  // GRPC_RESILIENCE_EXPERIMENTS_GOODPUT_LIVE_RUN_H_
