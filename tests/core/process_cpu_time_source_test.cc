// File: tests/core/process_cpu_time_source_test.cc
//
// The real CPU time source: CPU time grows with work done, the usable cores
// are at least one and at most the machine's, and cgroup quotas (v2 and v1)
// are read as Linux writes them.

#include "src/core/process_cpu_time_source.h"

#include <sys/stat.h>

#include <fstream>
#include <string>
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

// A cgroup's quota applies to every cgroup under it: a process whose own
// cgroup says "max" (a systemd service in a slice with CPUQuota=, a
// container under a pod-level limit) is held by its parent's, and the
// lowest quota on the way up is the one that holds. Missing files are
// skipped, and without any quota there is none (0).
TEST(ProcessCpuTimeSourceTest, ALowerQuotaOfAParentCgroupHolds) {
  const std::string root = ::testing::TempDir() + "/cgroup_quota_test";
  for (const char* dir : {"", "/a", "/a/b", "/a/b/c"}) mkdir((root + dir).c_str(), 0755);
  auto write = [&](const std::string& path, const char* line) {
    std::ofstream(root + path) << line;
  };
  write("/a/cpu.max", "150000 100000\n");
  write("/a/b/cpu.max", "400000 100000\n");
  write("/a/b/c/cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupQuotaCoresUnder(root, "0::/a/b/c\n"), 1.5);
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupQuotaCoresUnder(root, "0::/a/b\n"), 1.5);
  // A cgroup folder that is not visible (no cgroup namespace): the root's.
  write("/cpu.max", "300000 100000\n");
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupQuotaCoresUnder(root, "0::/elsewhere/x\n"), 3.0);
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupQuotaCoresUnder(root, "0::/\n"), 3.0);
  // No quota anywhere, or no cgroup v2 line: none.
  write("/cpu.max", "max 100000\n");
  write("/a/cpu.max", "max 100000\n");
  write("/a/b/cpu.max", "max 100000\n");
  EXPECT_EQ(ProcessCpuTimeSource::CgroupQuotaCoresUnder(root, "0::/a/b/c\n"), 0.0);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupQuotaCoresUnder(root, "4:memory:/a\n"), 0.0);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupQuotaCoresUnder(root + "/missing", "0::/a\n"), 0.0);
}

// cgroup v1 (Debian 12 hosts that boot the hybrid hierarchy, and Docker's
// --cpus on them): cpu.cfs_quota_us over cpu.cfs_period_us of the cgroup
// the cpu controller's line names, and of every one above it; -1 is none.
TEST(ProcessCpuTimeSourceTest, ReadsACgroupV1QuotaUpwards) {
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupV1QuotaCores("150000\n", "100000\n"), 1.5);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupV1QuotaCores("-1", "100000"), 0.0);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupV1QuotaCores("", "100000"), 0.0);
  EXPECT_EQ(ProcessCpuTimeSource::CgroupV1QuotaCores("50000", "0"), 0.0);

  const std::string root = ::testing::TempDir() + "/cgroup_v1_quota_test";
  for (const char* dir : {"", "/docker", "/docker/c1"}) mkdir((root + dir).c_str(), 0755);
  auto write = [&](const std::string& dir, const char* quota, const char* period) {
    std::ofstream(root + dir + "/cpu.cfs_quota_us") << quota << "\n";
    std::ofstream(root + dir + "/cpu.cfs_period_us") << period << "\n";
  };
  write("", "-1", "100000");
  write("/docker", "-1", "100000");
  write("/docker/c1", "50000", "100000");
  const char* cgroup = "12:memory:/other\n3:cpu,cpuacct:/docker/c1\n0::/\n";
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupV1QuotaCoresUnder(root, cgroup), 0.5);
  // A parent's lower quota holds.
  write("/docker", "25000", "100000");
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupV1QuotaCoresUnder(root, cgroup), 0.25);
  // The cgroup's folder not visible (inside the container): the root's.
  write("", "200000", "100000");
  EXPECT_DOUBLE_EQ(ProcessCpuTimeSource::CgroupV1QuotaCoresUnder(root, "2:cpu:/elsewhere/zz\n"),
                   2.0);
  // No line with the cpu controller (cpuacct alone is not it), or no quota.
  EXPECT_EQ(ProcessCpuTimeSource::CgroupV1QuotaCoresUnder(root, "2:cpuacct:/docker/c1\n0::/\n"),
            0.0);
  write("", "-1", "100000");
  write("/docker", "-1", "100000");
  write("/docker/c1", "-1", "100000");
  EXPECT_EQ(ProcessCpuTimeSource::CgroupV1QuotaCoresUnder(root, cgroup), 0.0);
}

}  // namespace
}  // namespace resilience
