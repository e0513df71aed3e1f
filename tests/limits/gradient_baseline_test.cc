// GradientConcurrencyLimiter's baseline measurement against calls that are
// no samples, on a SimulatedClock: slots given back unused or by cancelled
// calls, calls that expire too soon to be samples. Such calls never make the
// baseline; a measurement keeps its samples across them, and gives up when
// they are all it gets, instead of holding the limit at min_limit.

#include <memory>

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "src/limits/gradient_concurrency_limiter.h"
#include "tests/limits/gradient_limiter_testing.h"

namespace resilience {
namespace {

using ::resilience::testing::MustCreate;
using ::resilience::testing::WithinABucket;

// A slot given back unused (a call that never ran) or as kNeutral (one its
// client cancelled, whatever it ran) is freed but is no sample: the
// baseline measurement still waits for real samples (and 5 cancelled calls
// are fewer than the 10 that would make it give up).
TEST(GradientConcurrencyLimiterTest, NeutralReleaseIsNoSample) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  o.baseline_samples = 2;
  auto limiter = MustCreate(o, clock);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(limiter->TryAcquire());
    clock.AdvanceTime(absl::Milliseconds(5));
    if (i % 2 == 0) {
      limiter->ReleaseUnused();
    } else {
      limiter->Release(Outcome::kNeutral, absl::Milliseconds(5));
    }
  }
  EXPECT_EQ(limiter->in_flight(), 0);
  EXPECT_TRUE(limiter->measuring());
  ASSERT_TRUE(limiter->TryAcquire());
  ASSERT_TRUE(limiter->TryAcquire());
  clock.AdvanceTime(absl::Milliseconds(5));
  limiter->Release(Outcome::kSuccess, absl::Milliseconds(5));
  limiter->Release(Outcome::kSuccess, absl::Milliseconds(5));
  EXPECT_FALSE(limiter->measuring());
  EXPECT_TRUE(WithinABucket(limiter->baseline(), absl::Milliseconds(5)));
}

// A measurement gathers its samples across calls that expired too soon to
// be samples. Such drops used to close the pinned window, throwing away the
// samples it held: with three calls expiring early for every one answered,
// the measurement never ended and the limit stayed pinned at minLimit.
TEST(GradientConcurrencyLimiterTest, MeasurementKeepsItsSamplesThroughEarlyExpiries) {
  SimulatedClock clock;
  const GradientConcurrencyLimiter::Options o;  // baseline_samples 20
  auto limiter = MustCreate(o, clock);
  for (int i = 0; i < 20; ++i) {
    for (int j = 0; j < 3; ++j) {
      ASSERT_TRUE(limiter->TryAcquire());
      clock.AdvanceTime(absl::Milliseconds(1));
      limiter->ReleaseExpired(absl::Milliseconds(1));
    }
    ASSERT_TRUE(limiter->TryAcquire());
    clock.AdvanceTime(absl::Milliseconds(10));
    limiter->Release(Outcome::kSuccess, absl::Milliseconds(10));
  }
  EXPECT_FALSE(limiter->measuring());
  EXPECT_TRUE(WithinABucket(limiter->baseline(), absl::Milliseconds(10)));
  EXPECT_EQ(limiter->limit(), o.initial_limit);
}

// A measurement whose pinned calls all go unanswered (cancelled by their
// clients, or expired too soon to be samples) gives up once 5 x
// baseline_samples of them have ended: the limit leaves minLimit, and the
// baseline is measured at the next interval. Without a baseline, windows of
// answered calls leave the limit where it is. (It stayed pinned at minLimit
// for as long as no call was answered: a cancellation storm on a fresh
// server left its limit at 3.)
TEST(GradientConcurrencyLimiterTest, MeasurementWithoutAnsweredCallsGivesUp) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  o.baseline_samples = 4;  // given up after 20 unanswered calls
  auto limiter = MustCreate(o, clock);
  const auto unanswered = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(limiter->TryAcquire());
      clock.AdvanceTime(absl::Milliseconds(3));
      if (i % 2 == 0) {
        limiter->Release(Outcome::kNeutral, absl::Milliseconds(3));  // cancelled
      } else {
        limiter->ReleaseExpired(absl::Milliseconds(3));
      }
    }
  };
  unanswered(19);
  EXPECT_TRUE(limiter->measuring());
  EXPECT_EQ(limiter->limit(), o.min_limit);
  unanswered(1);
  EXPECT_FALSE(limiter->measuring());
  EXPECT_EQ(limiter->limit(), o.initial_limit);
  EXPECT_EQ(limiter->baseline(), absl::InfiniteDuration());
  // Answered calls 4x slower than any baseline could be: nothing to compare
  // them with, the limit stays; the next measurement comes within 1.25 x
  // baseline_interval and measures them.
  const absl::Time give_up = clock.Now();
  while (limiter->limit() != o.min_limit) {
    ASSERT_LT(clock.Now() - give_up, o.baseline_interval * 1.25 + absl::Seconds(1));
    EXPECT_EQ(limiter->limit(), o.initial_limit);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(limiter->TryAcquire());
    clock.AdvanceTime(o.sample_window);
    for (int i = 0; i < 10; ++i) limiter->Release(Outcome::kSuccess, absl::Milliseconds(12));
  }
  EXPECT_TRUE(limiter->measuring());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(limiter->TryAcquire());
    clock.AdvanceTime(absl::Milliseconds(12));
    limiter->Release(Outcome::kSuccess, absl::Milliseconds(12));
  }
  EXPECT_FALSE(limiter->measuring());
  EXPECT_TRUE(WithinABucket(limiter->baseline(), absl::Milliseconds(12)));
}

}  // namespace
}  // namespace resilience
