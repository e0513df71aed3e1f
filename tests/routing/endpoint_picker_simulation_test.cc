// EndpointPicker in a closed loop (tests/routing/picker_simulation.h): the
// routing targets, modelled on the simulated clock; and the picker under
// threads, for ThreadSanitizer.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/routing/endpoint_picker.h"
#include "tests/routing/picker_simulation.h"

namespace resilience {
namespace {

using testing::PickerSimulation;
using Replica = PickerSimulation::Replica;

PickerSimulation::Replica Healthy() { return Replica(); }

PickerSimulation::Replica TenTimesSlow() {
  Replica slow;
  slow.service = absl::Milliseconds(10);
  return slow;
}

// The routing target: one replica 10x slow (no errors), p99 <= 1.5x the
// all-healthy p99 at low load. Uniform routing in the same model is far off,
// which says the model can tell.
TEST(EndpointPickerSimulationTest, ATenTimesSlowReplicaBarelyMovesTheP99AtLowLoad) {
  PickerSimulation::Config config;
  config.callers = 4;
  config.replicas = {Healthy(), Healthy(), Healthy()};
  const PickerSimulation::Result healthy = PickerSimulation::Run(config);
  config.replicas = {Healthy(), Healthy(), TenTimesSlow()};
  const PickerSimulation::Result one_slow = PickerSimulation::Run(config);
  config.routing = PickerSimulation::Routing::kUniform;
  const PickerSimulation::Result uniform = PickerSimulation::Run(config);

  ASSERT_GT(healthy.Total(), 20000);
  const double p99 = healthy.Quantile(0.99);
  EXPECT_LE(one_slow.Quantile(0.99), 1.5 * p99)
      << "all healthy " << p99 << " ms, one slow " << one_slow.Quantile(0.99) << " ms";
  EXPECT_LE(one_slow.Quantile(0.5), 1.1 * healthy.Quantile(0.5));
  EXPECT_LT(one_slow.calls[2], one_slow.Total() / 100);
  EXPECT_GT(uniform.Quantile(0.99), 4 * p99) << "the model does not tell a slow replica";
}

// Above two replicas' capacity, the slow one still serves its share: no
// replica idles while the others saturate.
TEST(EndpointPickerSimulationTest, NoReplicaIdlesWhileTheOthersSaturate) {
  PickerSimulation::Config config;
  config.callers = 60;
  config.think = absl::ZeroDuration();
  config.duration = absl::Seconds(5);
  config.replicas = {Healthy(), Healthy(), TenTimesSlow()};
  const PickerSimulation::Result result = PickerSimulation::Run(config);
  for (size_t i = 0; i < result.utilization.size(); ++i) {
    EXPECT_GT(result.utilization[i], 0.9) << "replica " << i;
  }
}

// A replica with half the others' limit, under a load that would push it
// past its limit if calls in flight were spread evenly: its load reports
// keep it below, so that it rejects (almost) nothing.
TEST(EndpointPickerSimulationTest, LoadReportsKeepAHalfCapacityReplicaBelowItsLimit) {
  PickerSimulation::Config config;
  config.callers = 15;
  config.think = absl::ZeroDuration();
  config.duration = absl::Seconds(5);
  Replica full;
  full.workers = full.limit = 8;
  Replica half;
  half.workers = half.limit = 4;
  config.replicas = {full, full, half};
  const PickerSimulation::Result reported = PickerSimulation::Run(config);
  config.report_load = false;
  const PickerSimulation::Result unreported = PickerSimulation::Run(config);
  EXPECT_LE(reported.rejected[2], reported.Total() / 100);
  EXPECT_LT(reported.rejected[2], unreported.rejected[2] / 2)
      << "without reports " << unreported.rejected[2] << " of " << unreported.Total();
}

// Picks, starts and ends from several threads while the set changes: no
// race (TSan), and every call in flight is counted back down.
TEST(EndpointPickerConcurrencyTest, ThreadsPickStartAndEndWhileTheSetChanges) {
  SimulatedClock clock;
  EndpointPicker picker(EndpointPicker::Options(), clock);
  picker.SetEndpoints({"a", "b", "c"});
  std::atomic<bool> stop{false};
  std::thread changer([&] {
    for (int i = 0; !stop.load(); ++i) {
      clock.AdvanceTime(absl::Milliseconds(1));
      picker.SetEndpoints(i % 2 == 0 ? std::vector<std::string>{"a", "b", "c", "d"}
                                     : std::vector<std::string>{"a", "c", "e"});
      picker.Rejoin("a");
      picker.Exclude("c", i % 3 == 0 ? EndpointPicker::Out::kBreakerOpen
                                     : EndpointPicker::Out::kNo);
      (void)picker.Snapshot();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> callers;
  std::atomic<int> picked{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        std::shared_ptr<EndpointPicker::Endpoint> first = picker.Pick(
            [](const EndpointPicker::Endpoint& e) { return e.name() != "c"; }, {}, false);
        if (first == nullptr) continue;
        picker.Started(*first);
        const EndpointPicker::Endpoint* tried[] = {first.get()};
        std::shared_ptr<EndpointPicker::Endpoint> second =
            picker.Pick([](const EndpointPicker::Endpoint&) { return true; }, tried, true);
        picker.Started(*second);
        picker.Ended(*first, absl::Microseconds(100 + i % 50),
                     i % 7 == 0 ? EndpointPicker::Result::kFailure
                                : EndpointPicker::Result::kSuccess,
                     (i + t) % 5 == 0 ? std::optional<double>(0.5) : std::nullopt);
        picker.Ended(*second, absl::Microseconds(80), EndpointPicker::Result::kNeutral,
                     std::nullopt);
        picked.fetch_add(2);
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  stop.store(true);
  changer.join();
  EXPECT_EQ(picked.load(), 4 * 2000 * 2);
  for (const EndpointPicker::EndpointStats& stats : picker.Snapshot()) {
    EXPECT_EQ(stats.in_flight, 0) << stats.name;
  }
}

}  // namespace
}  // namespace resilience
