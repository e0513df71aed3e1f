#include "src/engine/limiter_factory.h"

#include <string>
#include <utility>


namespace resilience {

LimiterFactory::LimiterFactory(Clock& clock, uint64_t seed,
                               std::shared_ptr<const FleetLimitBackend> fleet)
    : clock_(clock), seed_(seed), fleet_(std::move(fleet)) {}

std::unique_ptr<Breaker> LimiterFactory::MakeBreaker(BreakerSettings settings,
                                                     BreakerListener listener) const {
  if (settings.kind == BreakerKind::kNone) return nullptr;
  settings.sre.listener = listener;
  settings.three_state.listener = std::move(listener);
  return CreateBreaker(settings, clock_, seed_);
}

std::shared_ptr<Bulkhead> LimiterFactory::MakeBulkhead(
    const Bulkhead::Options& options, const std::optional<Bulkhead::Options>& before,
    std::shared_ptr<Bulkhead> previous) const {
  if (previous != nullptr && before.has_value() &&
      before->max_concurrency == options.max_concurrency &&
      before->max_queue == options.max_queue && before->max_wait == options.max_wait) {
    return previous;  // the same bulkhead: the same slots and queue
  }
  return std::make_shared<Bulkhead>(options, clock_);
}

}  // namespace resilience
