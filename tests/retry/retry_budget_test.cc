// RetryBudget: gRPC's retryThrottling token bucket, its clamping of
// out-of-range settings and Validate()'s rules.

#include "src/retry/retry_budget.h"

#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

// gRPC's rules: full at start; each failure costs 1, each success gives back
// the ratio; retries stop at half the bucket and resume above it.
TEST(RetryBudgetTest, StopsAtHalfAndRecovers) {
  RetryBudget budget(10, 0.1);
  EXPECT_TRUE(budget.AllowRetry());
  for (int i = 0; i < 4; ++i) budget.RecordFailure();
  EXPECT_TRUE(budget.AllowRetry());  // 6 > 5
  budget.RecordFailure();
  EXPECT_FALSE(budget.AllowRetry());  // 5 is not > 5
  EXPECT_DOUBLE_EQ(budget.tokens(), 5.0);
  budget.RecordSuccess();
  EXPECT_TRUE(budget.AllowRetry());  // 5.1
  for (int i = 0; i < 100; ++i) budget.RecordFailure();
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);  // never below 0
  for (int i = 0; i < 1000; ++i) budget.RecordSuccess();
  EXPECT_DOUBLE_EQ(budget.tokens(), 10.0);  // never above max
}

// The burst a full bucket allows (docs/fleet.md "Amplification"): with 4
// tokens a client retries once at its first failures, however few calls it
// makes (10 tokens, the shipped policies.json's: 4 times), and one success
// above the half lets it retry again.
TEST(RetryBudgetTest, ABucketOfFourAllowsOneRetryFromFull) {
  auto retries_from_full = [](int max_tokens) {
    RetryBudget budget(max_tokens, 0.1);
    int retries = 0;
    budget.RecordFailure();  // the call's first attempt
    while (budget.AllowRetry()) {
      ++retries;
      budget.RecordFailure();  // the retry fails too
    }
    return retries;
  };
  EXPECT_EQ(retries_from_full(4), 1);
  EXPECT_EQ(retries_from_full(10), 4);
  RetryBudget budget(4, 0.1);
  budget.RecordFailure();
  budget.RecordFailure();
  EXPECT_FALSE(budget.AllowRetry());  // 2 is not > 2
  budget.RecordSuccess();
  EXPECT_TRUE(budget.AllowRetry());  // 2.1
}

// Concurrent updates are never lost.
TEST(RetryBudgetTest, ConcurrentUpdatesAreExact) {
  RetryBudget budget(1000, 1.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) budget.RecordFailure();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_DOUBLE_EQ(budget.tokens(), 600.0);
}

// A RetryBudget built from out-of-range values clamps them instead of
// overflowing.
TEST(RetryBudgetBoundsTest, OutOfRangeSettingsAreClamped) {
  RetryBudget nan_ratio(10, std::numeric_limits<double>::quiet_NaN());
  nan_ratio.RecordFailure();
  nan_ratio.RecordSuccess();
  EXPECT_DOUBLE_EQ(nan_ratio.tokens(), 9.001);
  RetryBudget huge(std::numeric_limits<int>::max(), 1e300);
  EXPECT_DOUBLE_EQ(huge.tokens(), 1000);
  huge.RecordFailure();
  huge.RecordSuccess();
  EXPECT_DOUBLE_EQ(huge.tokens(), 1000);
  RetryBudget none(0, -1);
  EXPECT_DOUBLE_EQ(none.tokens(), 1);
  EXPECT_TRUE(none.AllowRetry());
}

// The defaults are gRPC's usual ones and valid.
TEST(RetryBudgetTest, DefaultOptions) {
  const RetryBudget::Options o;
  EXPECT_EQ(o.max_tokens, 10);
  EXPECT_EQ(o.token_ratio, 0.1);
  EXPECT_TRUE(RetryBudget::Validate(o).ok());
  absl::StatusOr<std::unique_ptr<RetryBudget>> budget = RetryBudget::Create(o);
  ASSERT_TRUE(budget.ok()) << budget.status();
  EXPECT_DOUBLE_EQ((*budget)->tokens(), 10.0);  // full at start
}

// Each rule, with the field and the value in the message; Create() refuses
// what Validate() refuses, and the bounds themselves are accepted.
TEST(RetryBudgetTest, Validation) {
  const std::vector<std::pair<RetryBudget::Options, std::string>> refused = {
      {{0, 0.1}, "retry_budget.max_tokens: must be in [1, 1000], got 0"},
      {{-5, 0.1}, "retry_budget.max_tokens: must be in [1, 1000], got -5"},
      {{1001, 0.1}, "retry_budget.max_tokens: must be in [1, 1000], got 1001"},
      {{10, 0.0}, "retry_budget.token_ratio: must be in (0, 1], got 0"},
      {{10, 1.5}, "retry_budget.token_ratio: must be in (0, 1], got 1.5"},
      {{10, std::numeric_limits<double>::quiet_NaN()},
       "retry_budget.token_ratio: must be in (0, 1], got nan"},
  };
  for (const auto& [options, expected] : refused) {
    const absl::Status status = RetryBudget::Validate(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << expected;
    EXPECT_THAT(status.message(), HasSubstr(expected));
    EXPECT_EQ(RetryBudget::Create(options).status(), status);
  }
  for (const RetryBudget::Options& options :
       std::vector<RetryBudget::Options>{{1, 1.0}, {1000, 0.001}, {1000, 1e-9}}) {
    absl::StatusOr<std::unique_ptr<RetryBudget>> budget = RetryBudget::Create(options);
    ASSERT_TRUE(budget.ok()) << budget.status();
    EXPECT_DOUBLE_EQ((*budget)->tokens(), options.max_tokens);
  }
}

}  // namespace
}  // namespace resilience
