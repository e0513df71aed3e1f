#include "experiments/goodput/scheduled_faults.h"

namespace goodput {

ScheduledFaults::ScheduledFaults(const std::vector<Period>& schedule, uint64_t seed)
    : schedule_(schedule), seed_(seed) {}

absl::StatusCode ScheduledFaults::Serve(absl::string_view run, int64_t tick) {
  resilience::MutexLock lock(&mu_);
  std::unique_ptr<Run>& r = runs_[run];
  if (r == nullptr) r = std::make_unique<Run>(schedule_, seed_);
  const absl::StatusCode code = r->backend.Serve(tick);
  ++r->counts.served;
  if (r->backend.PeriodAt(tick).kind != Period::kHealthy) ++r->counts.served_failing;
  if (code != absl::StatusCode::kOk) ++r->counts.failed;
  return code;
}

ScheduledFaults::Counts ScheduledFaults::CountsOf(absl::string_view run) {
  resilience::MutexLock lock(&mu_);
  auto it = runs_.find(run);
  return it == runs_.end() ? Counts() : it->second->counts;
}

}  // namespace goodput
