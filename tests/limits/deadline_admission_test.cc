// DeadlineAdmission: refuses a call whose remaining deadline is below the
// method's service-time percentile, at most max_share of the window's
// arrivals; on the simulated clock, service times from a seeded generator.

#include "src/limits/deadline_admission.h"

#include <random>

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using Options = DeadlineAdmission::Options;

Options Small(double max_share = 1.0) {
  Options o;
  o.percentile = 0.9;
  o.max_share = max_share;
  o.window = absl::Seconds(10);
  o.min_samples = 10;
  return o;
}

TEST(DeadlineAdmissionTest, ValidateNamesFieldAndValue) {
  EXPECT_TRUE(DeadlineAdmission::Validate(Options(), "p").ok());
  Options o;
  o.percentile = 0.2;
  EXPECT_EQ(DeadlineAdmission::Validate(o, "t.deadlineAdmission").message(),
            "t.deadlineAdmission.percentile: must be in [0.5, 1], got 0.2");
  o = Options();
  o.max_share = 0;
  EXPECT_EQ(DeadlineAdmission::Validate(o, "p").message(), "p.maxShare: must be in (0, 1], got 0");
  o = Options();
  o.window = absl::Milliseconds(105);
  EXPECT_EQ(DeadlineAdmission::Validate(o, "p").message(),
            "p.window: must be in [100ms, 1h] and a whole multiple of 10ms, got 105ms");
  o = Options();
  o.min_samples = 0;
  EXPECT_EQ(DeadlineAdmission::Validate(o, "p").message(),
            "p.minSamples: must be in [1, 1000], got 0");
}

// No refusal before min_samples service times; then a deadline below the
// p90 is refused, one at or above it admitted, no deadline never refused.
TEST(DeadlineAdmissionTest, RefusesBelowThePercentileOnceWarm) {
  SimulatedClock clock;
  DeadlineAdmission admission(Small());
  for (int i = 0; i < 9; ++i) admission.Record(absl::Milliseconds(100));
  DeadlineAdmission::Decision d = admission.Decide(absl::Milliseconds(1), clock.Now());
  EXPECT_FALSE(d.refuse);
  EXPECT_FALSE(d.service_time.has_value());
  admission.Record(absl::Milliseconds(100));
  d = admission.Decide(absl::Milliseconds(50), clock.Now());
  EXPECT_TRUE(d.refuse);
  ASSERT_TRUE(d.service_time.has_value());
  // Reported as the bucket's upper bound: never below, at most 19% above.
  EXPECT_GE(*d.service_time, absl::Milliseconds(100));
  EXPECT_LE(*d.service_time, absl::Milliseconds(119));
  EXPECT_FALSE(admission.Decide(*d.service_time, clock.Now()).refuse);
  EXPECT_FALSE(admission.Decide(absl::InfiniteDuration(), clock.Now()).refuse);
}

// The percentile follows the distribution: with service times uniform in
// [10ms, 110ms) (seeded), p90 is about 100ms.
TEST(DeadlineAdmissionTest, PercentileOfSeededServiceTimes) {
  SimulatedClock clock;
  DeadlineAdmission admission(Small());
  std::mt19937 random(42);
  std::uniform_int_distribution<int> ms(10, 109);
  for (int i = 0; i < 1000; ++i) admission.Record(absl::Milliseconds(ms(random)));
  const std::optional<absl::Duration> p90 = admission.ServiceTime();
  ASSERT_TRUE(p90.has_value());
  EXPECT_GE(*p90, absl::Milliseconds(95));
  EXPECT_LE(*p90, absl::Milliseconds(125));
  EXPECT_TRUE(admission.Decide(absl::Milliseconds(80), clock.Now()).refuse);
  EXPECT_FALSE(admission.Decide(absl::Milliseconds(130), clock.Now()).refuse);
}

// With every arrival below the percentile, the refusals stay within
// max_share of the window's arrivals; once the window has passed, the
// share is available again.
TEST(DeadlineAdmissionTest, CapsTheRefusedShareOverTheWindow) {
  SimulatedClock clock;
  DeadlineAdmission admission(Small(/*max_share=*/0.2));
  for (int i = 0; i < 10; ++i) admission.Record(absl::Milliseconds(100));
  std::mt19937 random(7);
  std::uniform_int_distribution<int> remaining_ms(1, 99);
  int refused = 0;
  int capped = 0;
  for (int i = 1; i <= 1000; ++i) {
    clock.AdvanceTime(absl::Milliseconds(5));  // 1000 arrivals in 5 s
    const DeadlineAdmission::Decision d =
        admission.Decide(absl::Milliseconds(remaining_ms(random)), clock.Now());
    refused += d.refuse;
    capped += d.capped;
    ASSERT_LE(refused, 0.2 * i) << "after " << i << " arrivals";
  }
  EXPECT_EQ(refused, 200);
  EXPECT_EQ(capped, 800);
  EXPECT_EQ(admission.capped(), 800);
  // Past the window, the old refusals no longer count.
  clock.AdvanceTime(absl::Seconds(11));
  int later = 0;
  for (int i = 0; i < 10; ++i) later += admission.Decide(absl::Milliseconds(1), clock.Now()).refuse;
  EXPECT_EQ(later, 2);
}

// Calls with enough time left are counted as arrivals: they make room for
// refusals of the others, up to the share.
TEST(DeadlineAdmissionTest, AdmittedArrivalsMakeRoomForRefusals) {
  SimulatedClock clock;
  DeadlineAdmission admission(Small(/*max_share=*/0.5));
  for (int i = 0; i < 10; ++i) admission.Record(absl::Milliseconds(100));
  int refused = 0;
  for (int i = 0; i < 100; ++i) {
    clock.AdvanceTime(absl::Milliseconds(10));
    EXPECT_FALSE(admission.Decide(absl::Seconds(1), clock.Now()).refuse);
    refused += admission.Decide(absl::Milliseconds(10), clock.Now()).refuse;
  }
  EXPECT_EQ(refused, 100);
}

}  // namespace
}  // namespace resilience
