// CallVerdicts: the hand-over of verdicts from interceptors to the guard.

#include "grpc_resilience/internal/server_interceptors/call_verdicts.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace resilience {
namespace {

TEST(CallVerdictsTest, TakeReturnsEachVerdictOnce) {
  CallVerdicts verdicts;
  int a = 0, b = 0;
  EXPECT_EQ(verdicts.Take(&a).kind, Verdict::kRun);  // empty: the fast path
  verdicts.Reject(&a);
  verdicts.Reject(&a);  // idempotent
  EXPECT_EQ(verdicts.size(), 1);
  EXPECT_TRUE(verdicts.IsRejected(&a));
  EXPECT_FALSE(verdicts.IsRejected(&b));
  EXPECT_EQ(verdicts.Take(&b).kind, Verdict::kRun);
  EXPECT_EQ(verdicts.Take(&a).kind, Verdict::kReject);
  EXPECT_EQ(verdicts.Take(&a).kind, Verdict::kRun);
  verdicts.Reject(&b);
  verdicts.Forget(&b);
  verdicts.Forget(&b);
  EXPECT_EQ(verdicts.size(), 0);
}

TEST(CallVerdictsTest, HoldCarriesItsTimeAndARejectionWins) {
  CallVerdicts verdicts;
  std::atomic<int64_t> ended{0};
  int a = 0, b = 0;
  const absl::Time until = absl::FromUnixSeconds(100);
  verdicts.Hold(&a, until, &ended);
  EXPECT_FALSE(verdicts.IsRejected(&a));
  Verdict held = verdicts.Take(&a);
  EXPECT_EQ(held.kind, Verdict::kHold);
  EXPECT_EQ(held.hold_until, until);
  EXPECT_EQ(held.ended_while_held, &ended);
  verdicts.Reject(&b);
  verdicts.Hold(&b, until, &ended);
  EXPECT_EQ(verdicts.Take(&b).kind, Verdict::kReject);
  verdicts.Hold(&b, until, &ended);
  verdicts.Reject(&b);
  EXPECT_EQ(verdicts.Take(&b).kind, Verdict::kReject);
  EXPECT_EQ(verdicts.size(), 0);
}

// Many threads, each deciding and taking its own calls while others do the
// same: every verdict is taken exactly once and nothing is left behind.
TEST(CallVerdictsTest, ConcurrentCallsAreTakenExactlyOnce) {
  CallVerdicts verdicts;
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
        if (i % 2 == 0) verdicts.Reject(call);
        if (verdicts.Take(call).kind == Verdict::kReject) ++taken[t];
        verdicts.Forget(call);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(taken[t], kCalls / 2);
  EXPECT_EQ(verdicts.size(), 0);
}

}  // namespace
}  // namespace resilience
