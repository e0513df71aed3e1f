#include "grpc_resilience/internal/policy/method_policy.h"

namespace resilience {

std::unique_ptr<Breaker> CreateBreaker(const BreakerSettings& settings, Clock& clock,
                                       uint64_t seed) {
  switch (settings.kind) {
    case BreakerKind::kSre: {
      SreBreaker::Options o = settings.sre;
      o.seed = seed;
      return *SreBreaker::Create(o, clock);
    }
    case BreakerKind::kThreeState:
      return *ThreeStateBreaker::Create(settings.three_state, clock);
    case BreakerKind::kNone:
      break;
  }
  return nullptr;
}

}  // namespace resilience
