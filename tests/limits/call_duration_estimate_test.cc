// CallDurationEstimate: the expected duration of a call, behind the pushback
// a throttle suggests.

#include "src/limits/call_duration_estimate.h"

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

// Before any call finished, the estimate is 3 x the age of the first call
// started (by then it is done with probability 3/4 on a scale-free prior;
// never a small made-up number); then the smoothed duration.
TEST(CallDurationEstimateTest, FirstCallAgeThenSmoothedDuration) {
  SimulatedClock clock;
  CallDurationEstimate estimate;
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::ZeroDuration());
  estimate.Started(clock.Now());
  clock.AdvanceTime(absl::Milliseconds(50));
  estimate.Started(clock.Now());  // only the first start counts
  clock.AdvanceTime(absl::Milliseconds(250));
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::Milliseconds(900));
  estimate.Finished(absl::Milliseconds(400));
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::Milliseconds(400));
  estimate.Finished(absl::Milliseconds(80));  // 400 + (80 - 400) / 8
  EXPECT_EQ(estimate.Expected(clock.Now()), absl::Milliseconds(360));
}

}  // namespace
}  // namespace resilience
