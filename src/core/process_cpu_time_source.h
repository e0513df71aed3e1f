// File: src/core/process_cpu_time_source.h
//
// The real CpuTimeSource: getrusage(RUSAGE_SELF) for the process's CPU time;
// the CPU affinity mask, or a lower cgroup v2 quota (`cpu.max` of the
// process's cgroup or of one above it), for the cores it may use.

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

 private:
  double cores_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_PROCESS_CPU_TIME_SOURCE_H_
