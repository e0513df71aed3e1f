// The simulated backend shared by the criticality and tenant scenarios:
// workers take admitted calls from one FIFO queue, the clock follows the
// events, refused calls are forgotten, and a worker freed at the instant a
// call arrives serves it.

#include "experiments/overload/worker_queue_simulation.h"

#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace overload {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using Call = WorkerQueueSimulation::Call;

absl::Duration Ms(int64_t ms) { return absl::Milliseconds(ms); }

TEST(WorkerQueueSimulationTest, QueuedCallsWaitForTheFirstFreeWorkerInArrivalOrder) {
  resilience::SimulatedClock clock;
  const absl::Time start = clock.Now();
  // Two workers; three calls at once, then one more.
  const std::vector<Call> calls = {
      {Ms(0), Ms(10)}, {Ms(0), Ms(30)}, {Ms(0), Ms(5)}, {Ms(1), Ms(5)}};
  std::vector<std::pair<size_t, absl::Duration>> finished;
  std::vector<absl::Duration> arrivals_seen;
  WorkerQueueSimulation(2, clock).Run(
      calls,
      [&](size_t) {
        arrivals_seen.push_back(clock.Now() - start);
        return true;
      },
      [&](size_t i, absl::Duration latency) {
        EXPECT_EQ(clock.Now() - start, calls[i].arrival + latency);
        finished.emplace_back(i, latency);
      });
  EXPECT_THAT(arrivals_seen, ElementsAre(Ms(0), Ms(0), Ms(0), Ms(1)));
  // Call 2 waits for call 0's worker (10 ms), call 3 for the same worker
  // after call 2 (15 ms); call 1 runs its 30 ms alone.
  EXPECT_THAT(finished, ElementsAre(Pair(0, Ms(10)), Pair(2, Ms(15)), Pair(3, Ms(19)),
                                    Pair(1, Ms(30))));
}

TEST(WorkerQueueSimulationTest, RefusedCallsTakeNoWorker) {
  resilience::SimulatedClock clock;
  const std::vector<Call> calls = {{Ms(0), Ms(100)}, {Ms(1), Ms(100)}, {Ms(2), Ms(10)}};
  std::vector<std::pair<size_t, absl::Duration>> finished;
  WorkerQueueSimulation(1, clock).Run(
      calls, [](size_t i) { return i != 0; },
      [&](size_t i, absl::Duration latency) { finished.emplace_back(i, latency); });
  EXPECT_THAT(finished, ElementsAre(Pair(1, Ms(100)), Pair(2, Ms(109))));
}

TEST(WorkerQueueSimulationTest, AWorkerFreedAsACallArrivesServesItAtOnce) {
  resilience::SimulatedClock clock;
  const std::vector<Call> calls = {{Ms(0), Ms(10)}, {Ms(10), Ms(10)}};
  std::vector<int> events;  // 0: call 0 finished, 1: call 1 arrived
  std::vector<absl::Duration> latencies;
  WorkerQueueSimulation(1, clock).Run(
      calls,
      [&](size_t i) {
        if (i == 1) events.push_back(1);
        return true;
      },
      [&](size_t i, absl::Duration latency) {
        if (i == 0) events.push_back(0);
        latencies.push_back(latency);
      });
  EXPECT_THAT(events, ElementsAre(0, 1));
  EXPECT_THAT(latencies, ElementsAre(Ms(10), Ms(10)));
}

}  // namespace
}  // namespace overload
