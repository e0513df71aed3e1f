// Backoff: exponential growth, the cap, proportional and full jitter.

#include "gtest/gtest.h"
#include "grpc_resilience/internal/retry/backoff.h"
#include "tests/core/fake_random.h"

namespace resilience {
namespace {

using ::resilience::testing::FakeRandom;

// The base delay grows by the multiplier up to the cap; jitter spans
// [1 - j, 1 + j] of it.
TEST(BackoffTest, ExponentialWithProportionalJitter) {
  FakeRandom random(0.5);  // the middle of the jitter range: no jitter
  Backoff backoff({absl::Milliseconds(50), absl::Milliseconds(300), 2.0, 0.2, false}, random);
  EXPECT_EQ(backoff.Delay(1), absl::Milliseconds(50));
  EXPECT_EQ(backoff.Delay(2), absl::Milliseconds(100));
  EXPECT_EQ(backoff.Delay(3), absl::Milliseconds(200));
  EXPECT_EQ(backoff.Delay(4), absl::Milliseconds(300));  // capped
  EXPECT_EQ(backoff.Delay(10), absl::Milliseconds(300));
  random.Set(0.0);
  EXPECT_EQ(backoff.Delay(2), absl::Milliseconds(80));   // 100 x 0.8
  random.Set(0.999999);
  EXPECT_NEAR(absl::ToDoubleMilliseconds(backoff.Delay(2)), 120, 0.001);  // 100 x 1.2
}

// Full jitter draws in [0, base].
TEST(BackoffTest, FullJitter) {
  FakeRandom random(0.25);
  Backoff backoff({absl::Milliseconds(100), absl::Seconds(1), 2.0, 0.2, true}, random);
  EXPECT_EQ(backoff.Delay(2), absl::Milliseconds(50));  // 200 x 0.25
  random.Set(0.0);
  EXPECT_EQ(backoff.Delay(3), absl::ZeroDuration());
}

// Seeded draws stay within the jitter bounds.
TEST(BackoffTest, SeededDrawsStayInBounds) {
  SplitMixRandom random(42);
  Backoff backoff({absl::Milliseconds(50), absl::Seconds(1), 2.0, 0.2, false}, random);
  for (int i = 0; i < 10000; ++i) {
    const absl::Duration d = backoff.Delay(2);
    ASSERT_GE(d, absl::Milliseconds(80));
    ASSERT_LE(d, absl::Milliseconds(120));
  }
}

}  // namespace
}  // namespace resilience
