#include "experiments/overload/worker_queue_simulation.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <utility>

namespace overload {

WorkerQueueSimulation::WorkerQueueSimulation(int workers, resilience::SimulatedClock& clock)
    : workers_(std::max(1, workers)), clock_(clock) {}

void WorkerQueueSimulation::Run(const std::vector<Call>& calls,
                                absl::FunctionRef<bool(size_t)> admit,
                                absl::FunctionRef<void(size_t, absl::Duration)> finish) {
  const absl::Time start = clock_.Now();
  // Calls being worked on: (finish time, call index), earliest first.
  using Done = std::pair<absl::Duration, size_t>;
  std::priority_queue<Done, std::vector<Done>, std::greater<Done>> running;
  std::deque<size_t> queue;  // admitted, waiting for a worker
  // Work starts at the clock's time, which keeps whole nanoseconds: the
  // time the limits saw.
  const auto start_work = [&] {
    const absl::Duration now = clock_.Now() - start;
    while (static_cast<int>(running.size()) < workers_ && !queue.empty()) {
      const size_t i = queue.front();
      queue.pop_front();
      running.push({now + calls[i].service, i});
    }
  };
  size_t next = 0;
  while (next < calls.size() || !running.empty()) {
    absl::Duration t = absl::InfiniteDuration();
    if (next < calls.size()) t = calls[next].arrival;
    if (!running.empty()) t = std::min(t, running.top().first);
    clock_.SetTime(start + t);
    if (!running.empty() && running.top().first == t) {
      const size_t i = running.top().second;
      running.pop();
      finish(i, t - calls[i].arrival);
      start_work();
      continue;
    }
    if (admit(next)) {
      queue.push_back(next);
      start_work();
    }
    ++next;
  }
}

}  // namespace overload
