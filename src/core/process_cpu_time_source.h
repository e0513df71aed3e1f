// File: src/core/process_cpu_time_source.h
//
// The real CpuTimeSource: getrusage(RUSAGE_SELF) for the process's CPU time;
// the CPU affinity mask, or a lower cgroup quota (v2 `cpu.max`, v1
// `cpu.cfs_quota_us`, of the process's cgroup or of one above it), for the
// cores it may use.

#ifndef GRPC_RESILIENCE_SRC_CORE_PROCESS_CPU_TIME_SOURCE_H_
#define GRPC_RESILIENCE_SRC_CORE_PROCESS_CPU_TIME_SOURCE_H_

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/core/cpu_time_source.h"

namespace resilience {

// ProcessCpuTimeSource
//
// Cores() is read once, at construction. This class is thread-safe.
class ProcessCpuTimeSource final : public CpuTimeSource {
 public:
  ProcessCpuTimeSource();

  absl::Duration ProcessCpuTime() override;
  double Cores() override { return cores_; }

  // The process-wide instance. Never destroyed.
  static ProcessCpuTimeSource& Get();

  // CgroupQuotaCores()
  //
  // The cores a cgroup v2 `cpu.max` line allows ("200000 100000" is 2.0);
  // 0 for "max ..." (no quota) or a line that is not "QUOTA PERIOD" with
  // both positive.
  static double CgroupQuotaCores(absl::string_view cpu_max);

  // CgroupQuotaCoresUnder()
  //
  // The lowest quota (CgroupQuotaCores()) of the cgroup v2 named by the
  // "0::PATH" line of `proc_self_cgroup` (/proc/self/cgroup's text) and of
  // every cgroup above it, read from `root` (/sys/fs/cgroup) PATH/cpu.max
  // upwards; files missing or without a quota are skipped (a cgroup not
  // visible from here ends at `root`'s own). 0 when none has a quota.
  static double CgroupQuotaCoresUnder(absl::string_view root, absl::string_view proc_self_cgroup);

  // CgroupV1QuotaCores()
  //
  // The cores a cgroup v1 quota allows, from its `cpu.cfs_quota_us` and
  // `cpu.cfs_period_us` ("200000" over "100000" is 2.0); 0 for a quota of
  // -1 (none) or values that are not both positive numbers.
  static double CgroupV1QuotaCores(absl::string_view cfs_quota_us, absl::string_view cfs_period_us);

  // CgroupV1QuotaCoresUnder()
  //
  // As CgroupQuotaCoresUnder(), for cgroup v1: the cgroup of the
  // `proc_self_cgroup` line whose controllers include cpu
  // ("2:cpu,cpuacct:PATH"), read from `cpu_root` (/sys/fs/cgroup/cpu)
  // PATH upwards. 0 when none has a quota, or no line names cpu.
  static double CgroupV1QuotaCoresUnder(absl::string_view cpu_root,
                                        absl::string_view proc_self_cgroup);

 private:
  double cores_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_PROCESS_CPU_TIME_SOURCE_H_
