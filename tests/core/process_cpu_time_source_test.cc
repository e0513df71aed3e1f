// File: tests/core/process_cpu_time_source_test.cc
//
// The real CPU time source: CPU time grows with work done, the usable cores
// are at least one and at most the machine's, and a cgroup v2 quota line is
// read as Linux writes it.

#include "src/core/process_cpu_time_source.h"

#include <thread>

#include "gtest/gtest.h"

namespace resilience {
namespace {

TEST(ProcessCpuTimeSourceTest, CpuTimeGrowsWithWork) {
  ProcessCpuTimeSource& source = ProcessCpuTimeSource::Get();
  const absl::Duration before = source.ProcessCpuTime();
  // Work until getrusage's accounting has moved (bounded: 10 s of spinning).
  volatile uint64_t sink = 0;
  absl::Duration after = before;
  for (int round = 0; round < 100000 && after <= before; ++round) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<uint64_t>(i);
    after = source.ProcessCpuTime();
  }
  EXPECT_GT(after, before);
}

TEST(ProcessCpuTimeSourceTest, CoresAreWithinTheMachine) {
  const double cores = ProcessCpuTimeSource::Get().Cores();
  EXPECT_GT(cores, 0.0);
  EXPECT_LE(cores, static_cast<double>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(ProcessCpuTimeSourceTest, ReadsACgroupQuota) {
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupQuotaCores("200000 100000\n"), 2.0);
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupQuotaCores("50000 100000"), 0.5);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupQuotaCores("max 100000"), 0.0);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupQuotaCores(""), 0.0);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupQuotaCores("1 2 3"), 0.0);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupQuotaCores("-5 100000"), 0.0);
}

}  // namespace
}  // namespace resilience
