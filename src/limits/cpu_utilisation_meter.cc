// File: src/limits/cpu_utilisation_meter.cc

#include "src/limits/cpu_utilisation_meter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status CpuUtilisationMeter::ValidateThreshold(double threshold) {
  if (!(threshold > 0.0 && threshold <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("threshold: must be in (0, 1], got ", threshold));
  }
  return absl::OkStatus();
}

bool CpuUtilisationMeter::Sheds(double utilisation, double threshold, Criticality level) {
  switch (level) {
    case Criticality::kSheddable:
      return utilisation >= threshold;
    case Criticality::kSheddablePlus:
      return utilisation >= threshold + (1.0 - threshold) / 2;
    default:
      return false;
  }
}

CpuUtilisationMeter::CpuUtilisationMeter(Clock& clock, CpuTimeSource& source,
                                         absl::Duration window)
    : clock_(clock),
      source_(source),
      window_(window),
      step_ns_(std::max<int64_t>(1, absl::ToInt64Nanoseconds(window) / kSteps)),
      cores_(std::max(source.Cores(), 1e-3)) {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  ring_[0] = {now_ns, absl::ToInt64Nanoseconds(source_.ProcessCpuTime())};
  next_ = 1;
  count_ = 1;
  next_sample_ns_.store(now_ns + step_ns_, std::memory_order_relaxed);
}

double CpuUtilisationMeter::Utilisation() {
  const int64_t now_ns = absl::ToUnixNanos(clock_.Now());
  int64_t due = next_sample_ns_.load(std::memory_order_relaxed);
  // One thread wins the sample; the others read the last figure.
  if (now_ns >= due &&
      next_sample_ns_.compare_exchange_strong(due, now_ns + step_ns_, std::memory_order_relaxed)) {
    TakeSample(now_ns);
  }
  return utilisation_.load(std::memory_order_relaxed);
}

void CpuUtilisationMeter::TakeSample(int64_t now_ns) {
  const int64_t cpu_ns = absl::ToInt64Nanoseconds(source_.ProcessCpuTime());
  MutexLock lock(&mu_);
  ring_[next_] = {now_ns, cpu_ns};
  const int newest = next_;
  next_ = (next_ + 1) % static_cast<int>(ring_.size());
  count_ = std::min<int>(count_ + 1, static_cast<int>(ring_.size()));
  // The oldest sample still within the window (and a step), else the one
  // before this one (a quiet period: the figure spans it).
  const int64_t horizon = now_ns - absl::ToInt64Nanoseconds(window_) - step_ns_;
  int base = -1;
  for (int age = count_ - 1; age >= 1; --age) {
    const int i = (newest - age + static_cast<int>(ring_.size())) % static_cast<int>(ring_.size());
    if (ring_[i].wall_ns >= horizon || age == 1) {
      base = i;
      break;
    }
  }
  if (base < 0) return;
  const double wall = static_cast<double>(now_ns - ring_[base].wall_ns);
  const double cpu = static_cast<double>(std::max<int64_t>(0, cpu_ns - ring_[base].cpu_ns));
  if (wall > 0) utilisation_.store(cpu / (wall * cores_), std::memory_order_relaxed);
}

}  // namespace resilience
