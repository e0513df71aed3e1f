#include "src/breaker/clock.h"

#include "absl/time/clock.h"

namespace resilience {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace

Clock& Clock::Real() {
  static RealClock* const clock = new RealClock();  // never destroyed
  return *clock;
}

}  // namespace resilience
