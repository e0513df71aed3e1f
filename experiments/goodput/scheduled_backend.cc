#include "experiments/goodput/scheduled_backend.h"

#include "src/core/random_source.h"

namespace goodput {

ScheduledBackend::ScheduledBackend(const std::vector<Period>& schedule, uint64_t seed)
    : schedule_(schedule), seed_(seed) {}

bool ScheduledBackend::Capacity::Take(int64_t tick, int capacity) {
  const int64_t s = tick / 1000;
  if (s != second) {
    second = s;
    used = 0;
  }
  if (used >= capacity) return false;
  ++used;
  return true;
}

bool ScheduledBackend::ErrorDrawn(const Period& period, int64_t tick) const {
  // A draw that depends only on (seed, tick): every policy meets the same
  // failing calls.
  resilience::SplitMixRandom r(seed_ * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(tick));
  return r.NextUniform() < period.error_rate;
}

absl::StatusCode ScheduledBackend::Serve(int64_t tick) {
  const Period& p = PeriodAt(tick);
  switch (p.kind) {
    case Period::kHealthy:
      return absl::StatusCode::kOk;
    case Period::kDown:
      return absl::StatusCode::kUnavailable;
    case Period::kOverloaded:
      return served_.Take(tick, p.capacity_per_second) ? absl::StatusCode::kOk
                                                       : absl::StatusCode::kResourceExhausted;
    case Period::kErrors:
      return ErrorDrawn(p, tick) ? absl::StatusCode::kUnavailable : absl::StatusCode::kOk;
  }
  return absl::StatusCode::kInternal;
}

}  // namespace goodput
