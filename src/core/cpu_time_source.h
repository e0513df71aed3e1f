// File: src/core/cpu_time_source.h
//
// Where CPU utilisation comes from: the CPU time this process has used and
// the cores it may use. The server's CPU gate (src/limits/cpu_utilisation_meter.h)
// takes a CpuTimeSource& the way timing code takes a Clock&, so tests drive
// it by hand; ProcessCpuTimeSource (process_cpu_time_source.h) is the real one.

#ifndef GRPC_RESILIENCE_SRC_CORE_CPU_TIME_SOURCE_H_
#define GRPC_RESILIENCE_SRC_CORE_CPU_TIME_SOURCE_H_

#include "absl/time/time.h"

namespace resilience {

// CpuTimeSource
//
// Implementations must be thread-safe.
class CpuTimeSource {
 public:
  virtual ~CpuTimeSource() = default;

  // ProcessCpuTime()
  //
  // The CPU time (user + system) every thread of the process has used since
  // it started. Never decreases.
  virtual absl::Duration ProcessCpuTime() = 0;

  // Cores()
  //
  // How many cores' worth of CPU the process may use (its CPU affinity, or
  // a lower cgroup quota); > 0.
  virtual double Cores() = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_CPU_TIME_SOURCE_H_
