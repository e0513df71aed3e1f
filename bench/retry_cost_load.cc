#include "bench/retry_cost_load.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace retry_cost {
namespace {

// Load before the first round of each channel: connection set-up and each
// method's first-call resolution stay out of the rounds.
constexpr absl::Duration kWarmUp = absl::Milliseconds(300);

// What one caller thread saw in a round.
struct CallerTally {
  int64_t calls = 0;
  int64_t ok = 0;
  int64_t rejected_locally = 0;
  std::vector<int64_t> latency_ns;
};

void CallerLoop(Stub& stub, CallerKind kind, int caller, const absl::Notification& start,
                const std::atomic<bool>& stop, CallerTally& tally) {
  tally.latency_ns.reserve(1 << 16);
  size_t key = static_cast<size_t>(caller) * 7;  // callers start at different keys
  start.WaitForNotification();
  while (!stop.load(std::memory_order_relaxed)) {
    const auto begin = std::chrono::steady_clock::now();
    const Outcome outcome = GetOnce(stub, Keys()[key++ % Keys().size()], kind);
    tally.latency_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - begin)
                                   .count());
    ++tally.calls;
    if (outcome == Outcome::kOk) ++tally.ok;
    if (outcome == Outcome::kRejectedLocally) ++tally.rejected_locally;
  }
}

// Nearest rank: the smallest sample with at least q of them <= it.
double PercentileMs(const std::vector<int64_t>& sorted_ns, double q) {
  if (sorted_ns.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * sorted_ns.size()));
  return sorted_ns[std::clamp<size_t>(rank, 1, sorted_ns.size()) - 1] / 1e6;
}

ChainCounters Minus(const ChainCounters& a, const ChainCounters& b) {
  return {a.calls - b.calls,
          a.attempts - b.attempts,
          a.retries - b.retries,
          a.rejected_by_breaker - b.rejected_by_breaker,
          a.retry_budget_exhausted - b.retry_budget_exhausted,
          a.attempt_timeouts - b.attempt_timeouts};
}

}  // namespace

ProcessCounters ReadProcessCounters() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return {seconds(usage.ru_utime) + seconds(usage.ru_stime),
          static_cast<int64_t>(usage.ru_nvcsw + usage.ru_nivcsw)};
}

// `callers` threads calling Get in a closed loop for `duration`. The
// process counters are read with the threads created and waiting, so their
// creation is not measured.
RoundResult RunLoad(Stub& stub, CallerKind caller, int callers, absl::Duration duration) {
  std::vector<CallerTally> tallies(static_cast<size_t>(callers));
  absl::Notification start;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < callers; ++i) {
    threads.emplace_back(CallerLoop, std::ref(stub), caller, i, std::cref(start), std::cref(stop),
                         std::ref(tallies[static_cast<size_t>(i)]));
  }
  const ProcessCounters before = ReadProcessCounters();
  const absl::Time begin = absl::Now();
  start.Notify();
  absl::SleepFor(duration);
  stop.store(true);
  for (std::thread& t : threads) t.join();
  const absl::Duration elapsed = absl::Now() - begin;
  const ProcessCounters after = ReadProcessCounters();

  RoundResult r;
  std::vector<int64_t> latencies;
  for (const CallerTally& t : tallies) {
    r.calls += t.calls;
    r.ok += t.ok;
    r.rejected_locally += t.rejected_locally;
    latencies.insert(latencies.end(), t.latency_ns.begin(), t.latency_ns.end());
  }
  std::sort(latencies.begin(), latencies.end());
  r.seconds = absl::ToDoubleSeconds(elapsed);
  r.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
  r.context_switches = after.context_switches - before.context_switches;
  r.p50_ms = PercentileMs(latencies, 0.5);
  r.p99_ms = PercentileMs(latencies, 0.99);
  return r;
}

ChainCounters ReadChainCounters(const resilience::ClientResilience& resilience) {
  const resilience::ClientMethodStats s = resilience.Stats(kGetMethod);
  ChainCounters c;
  c.calls = s.calls;
  c.attempts = s.attempts;
  c.retries = s.retries;
  c.rejected_by_breaker = s.rejected_by_breaker;
  c.retry_budget_exhausted = s.retry_budget_exhausted;
  c.attempt_timeouts = s.attempt_timeouts;
  return c;
}

// Every client warmed up, then `rounds` rounds in which each client runs
// once. The first of each round rotates, so that no configuration always
// runs first (right after the warm-up or another phase's server stopped).
std::vector<ConfigRounds> RunInterleaved(std::vector<Client>& clients, const LoadSettings& load) {
  std::vector<ConfigRounds> results(clients.size());
  std::vector<ChainCounters> counters_before(clients.size());
  for (size_t i = 0; i < clients.size(); ++i) {
    results[i].name = clients[i].name;
    RunLoad(*clients[i].stub, clients[i].caller, load.callers, kWarmUp);
    if (clients[i].resilience) counters_before[i] = ReadChainCounters(*clients[i].resilience);
  }
  for (int round = 0; round < load.rounds; ++round) {
    for (size_t k = 0; k < clients.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(round)) % clients.size();
      results[i].rounds.push_back(RunLoad(*clients[i].stub, clients[i].caller, load.callers,
                                                load.round_length));
    }
  }
  for (size_t i = 0; i < clients.size(); ++i) {
    if (clients[i].resilience) {
      results[i].counters = Minus(ReadChainCounters(*clients[i].resilience), counters_before[i]);
    }
  }
  return results;
}

}  // namespace retry_cost
