// WindowedRetryBudget: retries bounded by token_ratio x the calls of the
// last ttl, the initial tokens of a new budget and their expiry, exact
// withdrawals under concurrency, and Validate()'s rules. On a SimulatedClock.

#include "src/retry/windowed_retry_budget.h"

#include <algorithm>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

WindowedRetryBudget::Options Opts(double ratio, absl::Duration ttl, int initial) {
  WindowedRetryBudget::Options o;
  o.token_ratio = ratio;
  o.ttl = ttl;
  o.initial_tokens = initial;
  return o;
}

// Ten calls fund one retry (ratio 0.1), and nothing is lent: the eleventh
// withdrawal after 100 calls fails.
TEST(WindowedRetryBudgetTest, TenCallsFundOneRetry) {
  SimulatedClock clock;
  WindowedRetryBudget budget(Opts(0.1, absl::Seconds(10), 0), clock);
  EXPECT_FALSE(budget.AllowRetry());
  for (int i = 0; i < 9; ++i) budget.RecordCall();
  EXPECT_FALSE(budget.TryWithdraw());  // 0.9 tokens
  budget.RecordCall();
  EXPECT_DOUBLE_EQ(budget.tokens(), 1.0);
  EXPECT_TRUE(budget.AllowRetry());
  EXPECT_TRUE(budget.TryWithdraw());
  EXPECT_FALSE(budget.TryWithdraw());
  for (int i = 0; i < 90; ++i) budget.RecordCall();
  int retries = 0;
  while (budget.TryWithdraw()) ++retries;
  EXPECT_EQ(retries, 9);
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);
}

// A new budget holds initial_tokens for its first ttl: then they expire,
// with the withdrawals they paid for, and only calls fund retries.
TEST(WindowedRetryBudgetTest, InitialTokensExpireAfterTtl) {
  SimulatedClock clock;
  WindowedRetryBudget budget(Opts(0.1, absl::Seconds(10), 5), clock);
  EXPECT_DOUBLE_EQ(budget.tokens(), 5.0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(budget.TryWithdraw());
  clock.AdvanceTime(absl::Milliseconds(9999));
  EXPECT_DOUBLE_EQ(budget.tokens(), 2.0);  // still the first ttl
  clock.AdvanceTime(absl::Milliseconds(1));
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);
  EXPECT_FALSE(budget.TryWithdraw());
}

// A withdrawal outlives the deposits that paid for it by up to a ttl: the
// balance goes below zero and no retry goes until it expires too.
TEST(WindowedRetryBudgetTest, WithdrawalsCountForTheirOwnTtl) {
  SimulatedClock clock;
  WindowedRetryBudget budget(Opts(0.5, absl::Seconds(10), 0), clock);
  budget.RecordCall();
  budget.RecordCall();  // 1 token, deposited at 0 s
  clock.AdvanceTime(absl::Seconds(5));
  EXPECT_TRUE(budget.TryWithdraw());  // taken at 5 s
  clock.AdvanceTime(absl::Seconds(5));
  EXPECT_DOUBLE_EQ(budget.tokens(), -1.0);  // the deposits expired at 10 s
  budget.RecordCall();
  budget.RecordCall();
  EXPECT_FALSE(budget.TryWithdraw());  // 0 tokens
  clock.AdvanceTime(absl::Seconds(5));
  EXPECT_DOUBLE_EQ(budget.tokens(), 1.0);  // the withdrawal expired at 15 s
  EXPECT_TRUE(budget.TryWithdraw());
}

// The bound the fleet relies on (docs/fleet.md, "Amplification"): a client
// whose every call fails and asks for two retries gets, at every retry, at
// most token_ratio x its calls of the last ttl over the last 0.9 ttl (a
// deposit lives between 0.9 ttl and ttl: ten buckets), at any call rate,
// and over a long run close to token_ratio x calls (none at all below
// 1 / (token_ratio x ttl) calls a second).
TEST(WindowedRetryBudgetTest, RetriesStayWithinTheRatioOfRecentCallsAtAnyRate) {
  const absl::Duration ttl = absl::Seconds(10);
  for (const double calls_per_second : {0.8, 3.0, 50.0, 1000.0}) {
    SimulatedClock clock;
    WindowedRetryBudget budget(Opts(0.1, ttl, 0), clock);
    const absl::Duration gap = absl::Seconds(1) / calls_per_second;
    std::deque<absl::Time> calls;
    std::deque<absl::Time> retries;
    int64_t total_calls = 0;
    int64_t total_retries = 0;
    const absl::Time end = clock.Now() + absl::Seconds(300);
    while (clock.Now() < end) {
      budget.RecordCall();
      calls.push_back(clock.Now());
      ++total_calls;
      for (int r = 0; r < 2 && budget.TryWithdraw(); ++r) {
        retries.push_back(clock.Now());
        ++total_retries;
        while (calls.front() <= clock.Now() - ttl) calls.pop_front();
        while (retries.front() <= clock.Now() - ttl * 0.9) retries.pop_front();
        ASSERT_LE(static_cast<double>(retries.size()), 0.1 * static_cast<double>(calls.size()) + 1e-9)
            << calls_per_second << " calls/s, at " << clock.Now();
      }
      clock.AdvanceTime(gap);
    }
    const double per_call = static_cast<double>(total_retries) / static_cast<double>(total_calls);
    EXPECT_LE(per_call, 0.1) << calls_per_second << " calls/s";
    if (calls_per_second * 10 * 0.1 < 1) {
      // Fewer than 1 / (ratio x ttl) calls a second never fund a token.
      EXPECT_EQ(total_retries, 0) << calls_per_second << " calls/s";
    } else {
      // The budget is used: all of it but the last ttl's part at most.
      EXPECT_GE(per_call, 0.1 * (1.0 - 10.0 / 300.0) - 1.0 / static_cast<double>(total_calls))
          << calls_per_second << " calls/s";
    }
  }
}

// min_retries_per_second: a floor of retries over each ttl that needs no
// calls, spent and regained as any withdrawal expires.
TEST(WindowedRetryBudgetTest, MinRetriesPerSecondIsAFloorPerTtl) {
  SimulatedClock clock;
  WindowedRetryBudget::Options o = Opts(0.1, absl::Seconds(10), 0);
  o.min_retries_per_second = 0.5;  // 5 tokens over 10 s
  WindowedRetryBudget budget(o, clock);
  EXPECT_DOUBLE_EQ(budget.tokens(), 5.0);
  for (int round = 0; round < 3; ++round) {
    int retries = 0;
    while (budget.TryWithdraw()) ++retries;
    EXPECT_EQ(retries, 5) << round;
    clock.AdvanceTime(absl::Seconds(10));  // the withdrawals expire
  }
  for (int i = 0; i < 10; ++i) budget.RecordCall();  // and calls add theirs
  EXPECT_DOUBLE_EQ(budget.tokens(), 6.0);
}

// Idle for longer than the window: everything expired, nothing goes wrong
// with the ring.
TEST(WindowedRetryBudgetTest, ALongIdleGapClearsTheWindow) {
  SimulatedClock clock;
  WindowedRetryBudget budget(Opts(1.0, absl::Seconds(1), 0), clock);
  for (int i = 0; i < 7; ++i) budget.RecordCall();
  clock.AdvanceTime(absl::Hours(30));
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);
  budget.RecordCall();
  EXPECT_TRUE(budget.TryWithdraw());
  EXPECT_FALSE(budget.TryWithdraw());
}

// Withdrawals are exact when threads race: never more than the deposits.
TEST(WindowedRetryBudgetTest, ConcurrentWithdrawalsNeverOverspend) {
  SimulatedClock clock;
  WindowedRetryBudget budget(Opts(0.1, absl::Seconds(10), 3), clock);
  constexpr int kThreads = 4;
  constexpr int kCalls = 2000;
  std::vector<int> taken(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&budget, &taken, t] {
      for (int i = 0; i < kCalls; ++i) {
        budget.RecordCall();
        while (budget.TryWithdraw()) ++taken[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  int total = 0;
  for (int n : taken) total += n;
  EXPECT_EQ(total, 3 + kThreads * kCalls / 10);
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);
}

TEST(WindowedRetryBudgetTest, ValidationNamesFieldAndValue) {
  const std::vector<std::pair<WindowedRetryBudget::Options, std::string>> refused = {
      {Opts(0.0, absl::Seconds(10), 0), "retry_budget.token_ratio: must be in (0, 1], got 0"},
      {Opts(1.5, absl::Seconds(10), 0), "retry_budget.token_ratio: must be in (0, 1], got 1.5"},
      {Opts(0.1, absl::ZeroDuration(), 0), "retry_budget.ttl: must be in [1s, 1m], got 0"},
      {Opts(0.1, absl::Seconds(61), 0), "retry_budget.ttl: must be in [1s, 1m], got 1m1s"},
      {Opts(0.1, absl::Seconds(10), -1),
       "retry_budget.initial_tokens: must be in [0, 1000], got -1"},
      {Opts(0.1, absl::Seconds(10), 1001),
       "retry_budget.initial_tokens: must be in [0, 1000], got 1001"},
  };
  WindowedRetryBudget::Options negative = Opts(0.1, absl::Seconds(10), 0);
  negative.min_retries_per_second = -1;
  EXPECT_EQ(WindowedRetryBudget::Validate(negative).message(),
            "retry_budget.min_retries_per_second: must be in [0, 1000], got -1");
  for (const auto& [options, message] : refused) {
    const absl::Status status = WindowedRetryBudget::Validate(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_EQ(status.message(), message);
  }
  EXPECT_TRUE(WindowedRetryBudget::Validate(WindowedRetryBudget::Options()).ok());
  EXPECT_TRUE(WindowedRetryBudget::Validate(Opts(1.0, absl::Seconds(1), 1000)).ok());
}

// Out-of-range options are clamped, so no value breaks the arithmetic.
TEST(WindowedRetryBudgetTest, OutOfRangeOptionsAreClamped) {
  SimulatedClock clock;
  WindowedRetryBudget budget(Opts(-1.0, absl::ZeroDuration(), 5000), clock);
  EXPECT_DOUBLE_EQ(budget.tokens(), 1000.0);
  budget.RecordCall();
  EXPECT_DOUBLE_EQ(budget.tokens(), 1000.001);
  clock.AdvanceTime(absl::Seconds(1));  // the ttl clamped to 1 s
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);
}

}  // namespace
}  // namespace resilience
