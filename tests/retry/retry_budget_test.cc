// RetryBudget: gRPC's retryThrottling token bucket.

#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "grpc_resilience/internal/retry/retry_budget.h"

namespace resilience {
namespace {

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

}  // namespace
}  // namespace resilience
