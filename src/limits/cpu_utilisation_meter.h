// File: src/limits/cpu_utilisation_meter.h
//
// The process's CPU utilisation over the last second or so, for the server
// throttle's CPU gate (`throttle.cpu`, docs/policy-reference.md): while the
// process is busy at or above a threshold, sheddable calls are refused before
// they cost more CPU, as go-zero's shedder and Sentinel's system rule do.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_CPU_UTILISATION_METER_H_
#define GRPC_RESILIENCE_SRC_LIMITS_CPU_UTILISATION_METER_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpc_resilience/criticality_level.h"
#include "src/core/clock.h"
#include "src/core/cpu_time_source.h"
#include "src/core/mutex.h"

namespace resilience {

// CpuUtilisationMeter
//
// Utilisation = CPU time the process used / (wall time x usable cores),
// 1.0 when every core it may use was busy. Sampled lazily by the calls that
// ask: at most once every window / kSteps, by one thread at a time (the
// others read the last figure: one clock read and two relaxed atomic loads),
// over the samples of about the last `window`. After a quiet period longer
// than the window, the first figure spans the quiet period too (low), and
// the window's own figure is back after `window`. This class is
// thread-safe.
class CpuUtilisationMeter {
 public:
  static constexpr int kSteps = 4;

  // ValidateThreshold()
  //
  // OK for a threshold in (0, 1]; InvalidArgument naming the value
  // otherwise ("threshold: must be in (0, 1], got 1.5"). NaN fails.
  static absl::Status ValidateThreshold(double threshold);

  // Sheds()
  //
  // Whether a call of `level` is refused at `utilisation` under
  // `threshold`: SHEDDABLE from the threshold up, SHEDDABLE_PLUS from
  // halfway between the threshold and 1, CRITICAL and CRITICAL_PLUS never.
  static bool Sheds(double utilisation, double threshold, Criticality level);

  // `clock` and `source` must outlive the meter. `window` > 0.
  CpuUtilisationMeter(Clock& clock, CpuTimeSource& source,
                      absl::Duration window = absl::Seconds(1));
  CpuUtilisationMeter(const CpuUtilisationMeter&) = delete;
  CpuUtilisationMeter& operator=(const CpuUtilisationMeter&) = delete;

  // Utilisation()
  //
  // The utilisation over about the last window, sampling first when a
  // sample is due; 0 until the first step has passed.
  double Utilisation() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Duration window() const { return window_; }

 private:
  struct Sample {
    int64_t wall_ns = 0;
    int64_t cpu_ns = 0;
  };

  void TakeSample(int64_t now_ns) ABSL_LOCKS_EXCLUDED(mu_);

  Clock& clock_;
  CpuTimeSource& source_;
  const absl::Duration window_;
  const int64_t step_ns_;
  const double cores_;
  std::atomic<int64_t> next_sample_ns_;
  std::atomic<double> utilisation_{0};
  Mutex mu_;
  // The last kSteps + 1 samples, oldest first from next_.
  std::array<Sample, kSteps + 1> ring_ ABSL_GUARDED_BY(mu_);
  int next_ ABSL_GUARDED_BY(mu_) = 0;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_CPU_UTILISATION_METER_H_
