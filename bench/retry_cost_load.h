// retry_cost_bench's load: closed-loop callers on one configuration for a
// round, what the process spent meanwhile, and the rounds of several
// configurations interleaved.

#ifndef GRPC_RESILIENCE_BENCH_RETRY_COST_LOAD_H_
#define GRPC_RESILIENCE_BENCH_RETRY_COST_LOAD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bench/retry_cost_channels.h"
#include "grpc_resilience/client.h"

namespace retry_cost {

// This process's CPU time (every thread: callers and gRPC's own) and
// context switches. The server is another process, so none of it is here.
struct ProcessCounters {
  double cpu_seconds = 0;
  int64_t context_switches = 0;
};

ProcessCounters ReadProcessCounters();

// The figures of one round of one configuration.
struct RoundResult {
  int64_t calls = 0;
  int64_t ok = 0;
  int64_t rejected_locally = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  int64_t context_switches = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

// `callers` threads calling Get (as `caller` says) in a closed loop for
// `duration`. The process counters are read with the threads created and
// waiting, so their creation is not measured.
RoundResult RunLoad(Stub& stub, CallerKind caller, int callers, absl::Duration duration);

// What our chain counted on Get over the measured rounds (not the warm-up):
// the check that nothing was retried, rejected or cut short unseen.
struct ChainCounters {
  int64_t calls = 0;
  int64_t attempts = 0;
  int64_t retries = 0;
  int64_t rejected_by_breaker = 0;
  int64_t retry_budget_exhausted = 0;
  int64_t attempt_timeouts = 0;
};

ChainCounters ReadChainCounters(const resilience::ClientResilience& resilience);

struct ConfigRounds {
  std::string name;
  std::vector<RoundResult> rounds;
  std::optional<ChainCounters> counters;  // our chain's channels only
};

struct LoadSettings {
  int callers = 4;
  absl::Duration round_length = absl::Seconds(2);
  int rounds = 5;
};

// Every client warmed up, then `rounds` rounds in which each client runs
// once. The first of each round rotates, so that no configuration always
// runs first (right after the warm-up or another phase's server stopped).
std::vector<ConfigRounds> RunInterleaved(std::vector<Client>& clients, const LoadSettings& load);

}  // namespace retry_cost

#endif  // GRPC_RESILIENCE_BENCH_RETRY_COST_LOAD_H_
