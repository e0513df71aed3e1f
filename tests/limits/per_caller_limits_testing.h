// File: tests/limits/per_caller_limits_testing.h
//
// What the tests of PerCallerLimits share: a critical call's level and
// shares, and limits made from options the test expects to be valid.

#ifndef GRPC_RESILIENCE_TESTS_LIMITS_PER_CALLER_LIMITS_TESTING_H_
#define GRPC_RESILIENCE_TESTS_LIMITS_PER_CALLER_LIMITS_TESTING_H_

#include <memory>

#include "gtest/gtest.h"
#include "src/core/clock.h"
#include "src/limits/per_caller_limits.h"

namespace resilience::testing {

inline constexpr Criticality kCrit = Criticality::kCritical;
inline const CriticalityShares kShares;

inline std::unique_ptr<PerCallerLimits> MakePerCaller(const PerCallerLimits::Options& options,
                                                      Clock& clock) {
  absl::StatusOr<std::unique_ptr<PerCallerLimits>> limits = PerCallerLimits::Create(options, clock);
  EXPECT_TRUE(limits.ok()) << limits.status();
  return limits.ok() ? *std::move(limits) : nullptr;
}

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_LIMITS_PER_CALLER_LIMITS_TESTING_H_
