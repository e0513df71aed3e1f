// RejectedCalls: the hand-over of rejections from interceptors to the guard.

#include "src/server_interceptors/rejected_calls.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace resilience {
namespace {

TEST(RejectedCallsTest, TakeReturnsEachRejectionOnce) {
  RejectedCalls rejected;
  int a = 0, b = 0;
  EXPECT_FALSE(rejected.Take(&a));  // empty: the fast path
  rejected.Add(&a);
  rejected.Add(&a);  // idempotent
  EXPECT_EQ(rejected.size(), 1);
  EXPECT_TRUE(rejected.Contains(&a));
  EXPECT_FALSE(rejected.Contains(&b));
  EXPECT_FALSE(rejected.Take(&b));
  EXPECT_TRUE(rejected.Take(&a));
  EXPECT_FALSE(rejected.Take(&a));
  rejected.Add(&b);
  rejected.Remove(&b);
  rejected.Remove(&b);
  EXPECT_EQ(rejected.size(), 0);
}

// Many threads, each rejecting and taking its own calls while others do the
// same: every call is taken exactly once and nothing is left behind.
TEST(RejectedCallsTest, ConcurrentCallsAreTakenExactlyOnce) {
  RejectedCalls rejected;
  constexpr int kThreads = 4;
  constexpr int kCalls = 20000;
  std::vector<std::unique_ptr<int[]>> calls;
  for (int t = 0; t < kThreads; ++t) calls.push_back(std::make_unique<int[]>(kCalls));
  std::vector<int> taken(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        int* call = &calls[t][i];
        if (i % 2 == 0) rejected.Add(call);
        if (rejected.Take(call)) ++taken[t];
        rejected.Remove(call);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(taken[t], kCalls / 2);
  EXPECT_EQ(rejected.size(), 0);
}

}  // namespace
}  // namespace resilience
