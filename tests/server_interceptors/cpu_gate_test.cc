// The server's CPU gate (throttle.cpu) over real channels: while the
// process's CPU utilisation is at or over the threshold, SHEDDABLE (and,
// higher up, SHEDDABLE_PLUS) calls are refused with a pushback and counted;
// CRITICAL calls never are; once the process is quiet again, all are
// served. The CPU is really burned; the window runs on a simulated clock, so
// the utilisation the gate sees is fixed by the test, whatever the machine.

#include <string>

#include "gmock/gmock.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "src/core/process_cpu_time_source.h"
#include "src/core/simulated_clock.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;

grpc::Status GetAt(cache::v1::CacheService::Stub& stub, const std::string& criticality,
                   std::string* pushback = nullptr) {
  return GetWithHeader(stub, "resilience-criticality", criticality, pushback);
}

// Spins until the process has used `cpu` more CPU time than when called.
void Burn(absl::Duration cpu) {
  ProcessCpuTimeSource& source = ProcessCpuTimeSource::Get();
  const absl::Duration until = source.ProcessCpuTime() + cpu;
  volatile uint64_t sink = 0;
  while (source.ProcessCpuTime() < until) {
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
}

TEST_P(ServerInterceptorsTest, CpuGateShedsSheddableCallsWhileTheProcessIsBusy) {
  SimulatedClock clock;
  Start(R"({"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"cpu": {"threshold": 0.5}}}]})",
        clock);
  // Twice every usable core's worth over the next quarter window of the
  // gate's clock: a utilisation of at least 2, over both levels' thresholds.
  const double cores = ProcessCpuTimeSource::Get().Cores();
  Burn(absl::Milliseconds(250) * cores * 2);
  clock.AdvanceTime(absl::Milliseconds(250));
  std::string pushback;
  grpc::Status shed = GetAt(*stub_, "SHEDDABLE", &pushback);
  EXPECT_EQ(shed.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(shed.error_message(),
              HasSubstr("/cache.v1.CacheService/Get: CPU utilisation "));
  EXPECT_THAT(shed.error_message(), HasSubstr(" at or over the threshold 0.5 for SHEDDABLE calls"));
  EXPECT_EQ(pushback, "250") << "come back after the gate's next sample";
  EXPECT_EQ(GetAt(*stub_, "SHEDDABLE_PLUS").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(GetAt(*stub_, "CRITICAL").ok());
  EXPECT_TRUE(GetAt(*stub_, "").ok()) << "no header: CRITICAL, never shed by the gate";
  EXPECT_EQ(counters_.get_bodies.load(), 2) << "a shed call never reaches the handler";

  // Quiet for two windows: the next sample sees almost nothing used.
  clock.AdvanceTime(absl::Seconds(2));
  EXPECT_TRUE(GetAt(*stub_, "SHEDDABLE").ok());

  const ServerMethodStats stats = state_->Stats(kGet);
  EXPECT_EQ(stats.rejected_cpu, 2);
  EXPECT_EQ(stats.rejected_concurrency + stats.rejected_rate, 0);
  EXPECT_EQ(stats.rejected_by_criticality[CriticalityIndex(Criticality::kSheddable)], 1);
  EXPECT_EQ(stats.rejected_by_criticality[CriticalityIndex(Criticality::kSheddablePlus)], 1);
  PrometheusText text;
  state_->AppendMetrics(text);
  EXPECT_THAT(text.Finish(), HasSubstr("grpc_resilience_server_rejections_total{grpc_method=\""
                                       "/cache.v1.CacheService/Get\",cause=\"cpu\"} 2"));
}

}  // namespace
}  // namespace resilience::testing
