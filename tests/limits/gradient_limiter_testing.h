// File: tests/limits/gradient_limiter_testing.h
//
// What the tests of GradientConcurrencyLimiter share: making one, and
// comparing a measured baseline with what it should be.

#ifndef GRPC_RESILIENCE_TESTS_LIMITS_GRADIENT_LIMITER_TESTING_H_
#define GRPC_RESILIENCE_TESTS_LIMITS_GRADIENT_LIMITER_TESTING_H_

#include <memory>
#include <utility>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "src/core/clock.h"
#include "src/limits/gradient_concurrency_limiter.h"

namespace resilience::testing {

// Whether a baseline (a median read from a histogram) is `expected`, to
// within the histogram's resolution (3.2%).
inline ::testing::AssertionResult WithinABucket(absl::Duration baseline,
                                                absl::Duration expected) {
  if (absl::AbsDuration(baseline - expected) <= expected * 0.032) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "baseline " << baseline << ", expected " << expected;
}

// A limiter for `o` on `clock`; a test failure if Create() refuses.
inline std::unique_ptr<GradientConcurrencyLimiter> MustCreate(
    const GradientConcurrencyLimiter::Options& o, Clock& clock) {
  auto made = GradientConcurrencyLimiter::Create(o, clock);
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_LIMITS_GRADIENT_LIMITER_TESTING_H_
