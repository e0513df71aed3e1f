// File: tests/limits/cpu_utilisation_meter_test.cc
//
// The CPU gate's meter on a simulated clock and a CPU time moved by hand:
// the figure is the CPU used over about the last window per usable core,
// one sample per step, a quiet period counts as quiet, and the gate sheds
// SHEDDABLE first, SHEDDABLE_PLUS later, CRITICAL never.

#include "src/limits/cpu_utilisation_meter.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

class FakeCpu final : public CpuTimeSource {
 public:
  explicit FakeCpu(double cores) : cores_(cores) {}
  absl::Duration ProcessCpuTime() override {
    ++reads_;
    return absl::Nanoseconds(cpu_ns_.load());
  }
  double Cores() override { return cores_; }
  void Burn(absl::Duration d) { cpu_ns_ += absl::ToInt64Nanoseconds(d); }
  int reads() const { return reads_.load(); }

 private:
  const double cores_;
  std::atomic<int64_t> cpu_ns_{0};
  std::atomic<int> reads_{0};
};

// Moves the clock by `step` `n` times, burning `busy` of each step on the
// fake CPU and asking the meter once per step.
double RunSteps(SimulatedClock& clock, FakeCpu& cpu, CpuUtilisationMeter& meter, absl::Duration step,
           double busy_cores, int n) {
  double last = 0;
  for (int i = 0; i < n; ++i) {
    clock.AdvanceTime(step);
    cpu.Burn(step * busy_cores);
    last = meter.Utilisation();
  }
  return last;
}

TEST(CpuUtilisationMeterTest, MeasuresCpuPerUsableCoreOverTheWindow) {
  SimulatedClock clock;
  FakeCpu cpu(2.0);
  CpuUtilisationMeter meter(clock, cpu, absl::Seconds(1));
  EXPECT_EQ(meter.Utilisation(), 0.0) << "no figure before the first step";
  // 1.5 busy cores of 2 for two seconds: 0.75.
  EXPECT_NEAR(RunSteps(clock, cpu, meter, absl::Milliseconds(250), 1.5, 8), 0.75, 1e-9);
  // Idle for a window and a step: the busy samples have left the window.
  EXPECT_NEAR(RunSteps(clock, cpu, meter, absl::Milliseconds(250), 0.0, 5), 0.0, 1e-9);
  // Half a window busy again at 2 cores: the figure rises with it.
  const double rising = RunSteps(clock, cpu, meter, absl::Milliseconds(250), 2.0, 2);
  EXPECT_GT(rising, 0.3);
  EXPECT_LT(rising, 1.0);
  EXPECT_NEAR(RunSteps(clock, cpu, meter, absl::Milliseconds(250), 2.0, 5), 1.0, 1e-9);
}

TEST(CpuUtilisationMeterTest, SamplesOncePerStepHoweverManyCallsAsk) {
  SimulatedClock clock;
  FakeCpu cpu(1.0);
  CpuUtilisationMeter meter(clock, cpu, absl::Seconds(1));
  const int at_start = cpu.reads();
  for (int i = 0; i < 1000; ++i) meter.Utilisation();
  EXPECT_EQ(cpu.reads(), at_start) << "nothing due before a step has passed";
  clock.AdvanceTime(absl::Milliseconds(250));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) meter.Utilisation();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cpu.reads(), at_start + 1) << "one sample per step, taken by one thread";
}

TEST(CpuUtilisationMeterTest, AQuietPeriodLongerThanTheWindowCountsAsQuiet) {
  SimulatedClock clock;
  FakeCpu cpu(4.0);
  CpuUtilisationMeter meter(clock, cpu, absl::Seconds(1));
  RunSteps(clock, cpu, meter, absl::Milliseconds(250), 4.0, 8);
  // Nobody asks for a minute, then one second of full load: the first figure
  // spans the minute (low), the window's own figure is back a window later.
  clock.AdvanceTime(absl::Minutes(1));
  cpu.Burn(absl::Seconds(1) * 4.0);
  clock.AdvanceTime(absl::Seconds(1));
  EXPECT_LT(meter.Utilisation(), 0.1);
  EXPECT_NEAR(RunSteps(clock, cpu, meter, absl::Milliseconds(250), 4.0, 5), 1.0, 1e-9);
}

TEST(CpuUtilisationMeterTest, ShedsSheddableFirstAndCriticalNever) {
  const double threshold = 0.8;
  EXPECT_FALSE(CpuUtilisationMeter::Sheds(0.79, threshold, Criticality::kSheddable));
  EXPECT_TRUE(CpuUtilisationMeter::Sheds(0.8, threshold, Criticality::kSheddable));
  EXPECT_FALSE(CpuUtilisationMeter::Sheds(0.89, threshold, Criticality::kSheddablePlus));
  EXPECT_TRUE(CpuUtilisationMeter::Sheds(0.9, threshold, Criticality::kSheddablePlus));
  for (double u : {0.5, 1.0, 3.0}) {
    EXPECT_FALSE(CpuUtilisationMeter::Sheds(u, threshold, Criticality::kCritical));
    EXPECT_FALSE(CpuUtilisationMeter::Sheds(u, threshold, Criticality::kCriticalPlus));
  }
}

TEST(CpuUtilisationMeterTest, ValidatesTheThreshold) {
  EXPECT_TRUE(CpuUtilisationMeter::ValidateThreshold(0.01).ok());
  EXPECT_TRUE(CpuUtilisationMeter::ValidateThreshold(1.0).ok());
  for (double bad : {0.0, -0.5, 1.01, std::nan("")}) {
    absl::Status s = CpuUtilisationMeter::ValidateThreshold(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("threshold: must be in (0, 1], got"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace resilience
