// HedgingDecider: gRFC A6's hedging (maxAttempts, hedgingDelay,
// nonFatalStatusCodes), the adaptive delay, the budget hedges spend and
// pushback, on simulated time (the decider reads no clock).

#include "src/retry/hedging_decider.h"

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

// The method budget's tokens and verdict (-1 and false without one).
double Tokens(const RetryBudget* budget) { return budget == nullptr ? -1 : budget->tokens(); }
[[maybe_unused]] bool Allows(const RetryBudget* budget) {
  return budget != nullptr && budget->AllowRetry();
}

using Call = HedgingDecider::Call;

class HedgingDeciderTest : public ::testing::Test {
 protected:
  // maxAttempts 3, hedgingDelay 10ms, UNAVAILABLE non-fatal, budget 10
  // tokens with ratio 0.1.
  static HedgingDecider::Options Defaults() {
    HedgingDecider::Options options;
    options.max_attempts = 3;
    options.delay = absl::Milliseconds(10);
    options.non_fatal_codes = {absl::StatusCode::kUnavailable};
    options.budget = RetryBudget::Options{10, 0.1};
    return options;
  }

  static AttemptOutcome Ended(absl::StatusCode code) {
    AttemptOutcome outcome;
    outcome.code = code;
    return outcome;
  }

  absl::Time Now() { return clock_.Now(); }

  // The attempts still in flight end as cancelled losers.
  void CancelLosers(const HedgingDecider& decider, Call& call) {
    while (call.in_flight > 0) {
      decider.OnAttemptEnd(call, Ended(absl::StatusCode::kCancelled), Now(), absl::InfiniteFuture());
    }
  }

  SimulatedClock clock_{absl::FromUnixSeconds(1000)};
  const absl::Time deadline_ = absl::FromUnixSeconds(1000) + absl::Seconds(1);
};

TEST_F(HedgingDeciderTest, StartSendsOneAttemptAndArmsTheDelay) {
  HedgingDecider decider(Defaults());
  Call call;
  const HedgeStep step = decider.Start(call);
  EXPECT_TRUE(step.send);
  EXPECT_EQ(step.arm_timer, absl::Milliseconds(10));
  EXPECT_FALSE(step.finished());
  EXPECT_EQ(call.sent, 1);
  EXPECT_EQ(call.in_flight, 1);
}

TEST_F(HedgingDeciderTest, EachDelaySendsAHedgeUntilMaxAttempts) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  clock_.AdvanceTime(absl::Milliseconds(10));
  HedgeStep step = decider.OnTimer(call, Now(), deadline_);
  EXPECT_TRUE(step.send);
  EXPECT_EQ(step.arm_timer, absl::Milliseconds(10));  // one attempt left
  clock_.AdvanceTime(absl::Milliseconds(10));
  step = decider.OnTimer(call, Now(), deadline_);
  EXPECT_TRUE(step.send);
  EXPECT_FALSE(step.arm_timer.has_value());  // the last one
  EXPECT_TRUE(step.cancel_timer);
  EXPECT_EQ(call.sent, 3);
  EXPECT_EQ(call.in_flight, 3);
  step = decider.OnTimer(call, Now(), deadline_);  // a stray timer
  EXPECT_FALSE(step.send);
  // Each timer hedge cost one token.
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 8.0);
}

TEST_F(HedgingDeciderTest, FirstOkWinsAndLosersChangeNothing) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  decider.OnTimer(call, Now(), deadline_);
  HedgeStep step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kOk), Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kSucceeded);
  EXPECT_TRUE(step.cancel_timer);
  EXPECT_FALSE(step.send);
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 9.1);  // -1 for the hedge, +0.1
  // The loser, cancelled: nothing, however it ended.
  step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_FALSE(step.finished());
  EXPECT_FALSE(step.send);
  EXPECT_EQ(call.in_flight, 0);
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 9.1);
}

TEST_F(HedgingDeciderTest, FatalCodeEndsTheCallAtOnce) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  decider.OnTimer(call, Now(), deadline_);
  const HedgeStep step =
      decider.OnAttemptEnd(call, Ended(absl::StatusCode::kNotFound), Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kNotRetryable);
  EXPECT_TRUE(step.cancel_timer);
  EXPECT_EQ(call.in_flight, 1);  // the caller cancels it
}

TEST_F(HedgingDeciderTest, NonFatalCodeSendsTheNextHedgeAtOnce) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  clock_.AdvanceTime(absl::Milliseconds(3));  // well before the delay
  HedgeStep step =
      decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_FALSE(step.finished());
  EXPECT_TRUE(step.send);
  EXPECT_EQ(step.arm_timer, absl::Milliseconds(10));  // the timer restarts
  EXPECT_EQ(call.sent, 2);
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 9.0);  // the failure's token only
}

TEST_F(HedgingDeciderTest, NonFatalCodesUntilAttemptsRunOut) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  HedgeStep step;
  for (int i = 0; i < 2; ++i) {
    step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
    ASSERT_TRUE(step.send);
  }
  step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kAttemptsExhausted);
}

TEST_F(HedgingDeciderTest, NonFatalEndWaitsForTheOthersInFlight) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  decider.OnTimer(call, Now(), deadline_);
  decider.OnTimer(call, Now(), deadline_);  // all three in flight
  HedgeStep step =
      decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_FALSE(step.finished());
  EXPECT_FALSE(step.send);
  step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_FALSE(step.finished());
  step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kOk), Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kSucceeded);
}

TEST_F(HedgingDeciderTest, PushbackStopEndsHedging) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  decider.OnTimer(call, Now(), deadline_);
  AttemptOutcome outcome = Ended(absl::StatusCode::kUnavailable);
  outcome.pushback = Pushback::Parse("-1");
  HedgeStep step = decider.OnAttemptEnd(call, outcome, Now(), deadline_);
  EXPECT_FALSE(step.finished());  // the other attempt may still answer
  EXPECT_FALSE(step.send);
  EXPECT_TRUE(step.cancel_timer);
  EXPECT_FALSE(decider.OnTimer(call, Now(), deadline_).send);
  step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kPushbackStop);
}

TEST_F(HedgingDeciderTest, PushbackDelayPostponesTheNextHedge) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  AttemptOutcome outcome = Ended(absl::StatusCode::kUnavailable);
  outcome.pushback = Pushback::Parse("250");
  HedgeStep step = decider.OnAttemptEnd(call, outcome, Now(), deadline_);
  EXPECT_FALSE(step.finished());
  EXPECT_FALSE(step.send);
  EXPECT_EQ(step.arm_timer, absl::Milliseconds(250));
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 9.0);
  clock_.AdvanceTime(absl::Milliseconds(250));
  step = decider.OnTimer(call, Now(), deadline_);
  EXPECT_TRUE(step.send);
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 9.0);  // paid by the failure
  // A pushback past the deadline ends the call.
  Call late;
  decider.Start(late);
  outcome.pushback = Pushback::Parse("5000");
  EXPECT_EQ(decider.OnAttemptEnd(late, outcome, Now(), deadline_).verdict,
            RetryVerdict::kBackoffPastDeadline);
}

// A pushback postponed the next hedge after the only attempt ended; while
// it waited, other calls spent the budget. The timer sends nothing, and
// nothing else is in flight to end the call: the timer must end it.
TEST_F(HedgingDeciderTest, PostponedHedgeRefusedByTheBudgetEndsTheCall) {
  HedgingDecider::Options options = Defaults();
  options.budget = RetryBudget::Options{4, 0.1};  // hedges while tokens > 2
  HedgingDecider decider(options);
  Call call;
  decider.Start(call);
  AttemptOutcome outcome = Ended(absl::StatusCode::kUnavailable);
  outcome.pushback = Pushback::Parse("20");
  HedgeStep step = decider.OnAttemptEnd(call, outcome, Now(), deadline_);  // 4 -> 3 tokens
  ASSERT_EQ(step.arm_timer, absl::Milliseconds(20));
  ASSERT_EQ(call.in_flight, 0);
  Call other;  // another call's non-fatal failure: 3 -> 2 tokens
  decider.Start(other);
  decider.OnAttemptEnd(other, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  ASSERT_FALSE(Allows(decider.budget()));
  clock_.AdvanceTime(absl::Milliseconds(20));
  step = decider.OnTimer(call, Now(), deadline_);
  EXPECT_FALSE(step.send);
  EXPECT_EQ(step.verdict, RetryVerdict::kBudgetSpent);
  EXPECT_TRUE(call.ended);
}

// The same with the call's deadline passed when the postponed hedge's timer
// fires (a late alarm): the call ends with its deadline.
TEST_F(HedgingDeciderTest, PostponedHedgePastTheDeadlineEndsTheCall) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  AttemptOutcome outcome = Ended(absl::StatusCode::kUnavailable);
  outcome.pushback = Pushback::Parse("900");
  ASSERT_EQ(decider.OnAttemptEnd(call, outcome, Now(), deadline_).arm_timer,
            absl::Milliseconds(900));
  clock_.AdvanceTime(absl::Seconds(1));
  const HedgeStep step = decider.OnTimer(call, Now(), deadline_);
  EXPECT_FALSE(step.send);
  EXPECT_EQ(step.verdict, RetryVerdict::kCallDeadline);
}

TEST_F(HedgingDeciderTest, SpentBudgetSendsNoHedges) {
  HedgingDecider::Options options = Defaults();
  options.budget = RetryBudget::Options{4, 0.1};  // hedges while tokens > 2
  HedgingDecider decider(options);
  for (int i = 0; i < 2; ++i) {  // two calls hedge once each: 4 -> 2 tokens
    Call call;
    decider.Start(call);
    ASSERT_TRUE(decider.OnTimer(call, Now(), deadline_).send);
  }
  Call call;
  decider.Start(call);
  HedgeStep step = decider.OnTimer(call, Now(), deadline_);
  EXPECT_FALSE(step.send);
  EXPECT_EQ(call.stopped, RetryVerdict::kBudgetSpent);
  step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kBudgetSpent);
  // Successes refill it: 0.1 each, so 10 of them buy one hedge back... once
  // tokens are above half again (2 + 0.1 * 11 > 2 + 1).
  for (int i = 0; i < 11; ++i) {
    Call ok;
    decider.Start(ok);
    decider.OnAttemptEnd(ok, Ended(absl::StatusCode::kOk), Now(), deadline_);
  }
  Call again;
  decider.Start(again);
  EXPECT_TRUE(decider.OnTimer(again, Now(), deadline_).send);
}

// gRPC's retryThrottling (gRFC A6) for hedges: no hedge while the
// channel's throttle holds maxTokens / 2 or fewer; failures (non-fatal, or
// any pushback) cost it a token, successes give back its ratio, and a
// hedge sent by the timer costs it nothing (A6 charges failures only).
TEST_F(HedgingDeciderTest, ChannelThrottleHoldsHedgesAsA6Says) {
  RetryBudget throttle(4, 0.5);  // hedges while tokens > 2
  HedgingDecider::Options options = Defaults();
  options.budget.reset();  // the throttle alone
  options.throttle = &throttle;
  HedgingDecider decider(options);
  EXPECT_EQ(decider.budget(), nullptr);
  Call call;
  decider.Start(call);
  EXPECT_TRUE(decider.OnTimer(call, Now(), deadline_).send);
  EXPECT_DOUBLE_EQ(throttle.tokens(), 4.0);  // a timer hedge is free
  // Another method's calls fail on the same channel: 4 -> 2.
  throttle.RecordFailure();
  AttemptOutcome pushed = Ended(absl::StatusCode::kNotFound);  // fatal, with a pushback
  pushed.pushback = Pushback::Parse("5");
  Call fatal;
  decider.Start(fatal);
  EXPECT_EQ(decider.OnAttemptEnd(fatal, pushed, Now(), deadline_).verdict,
            RetryVerdict::kNotRetryable);
  EXPECT_DOUBLE_EQ(throttle.tokens(), 2.0);
  HedgeStep step = decider.OnTimer(call, Now(), deadline_);
  EXPECT_FALSE(step.send);
  EXPECT_EQ(call.stopped, RetryVerdict::kBudgetSpent);
  // Successes anywhere on the channel let hedges go again.
  for (int i = 0; i < 2; ++i) throttle.RecordSuccess();
  Call next;
  decider.Start(next);
  EXPECT_TRUE(decider.OnTimer(next, Now(), deadline_).send);
  EXPECT_EQ(decider.OnAttemptEnd(next, Ended(absl::StatusCode::kOk), Now(), deadline_).verdict,
            RetryVerdict::kSucceeded);
  EXPECT_DOUBLE_EQ(throttle.tokens(), 3.5);
}

// Under overload every call is slow, so every call's timer fires: the
// budget holds hedges to its token ratio per successful call.
TEST_F(HedgingDeciderTest, EverySlowCallCannotDoubleTheLoad) {
  HedgingDecider decider(Defaults());
  int attempts = 0;
  constexpr int kCalls = 10000;
  for (int i = 0; i < kCalls; ++i) {
    Call call;
    attempts += decider.Start(call).send;
    clock_.AdvanceTime(absl::Milliseconds(10));
    attempts += decider.OnTimer(call, Now(), absl::InfiniteFuture()).send;
    attempts += decider.OnTimer(call, Now(), absl::InfiniteFuture()).send;
    decider.OnAttemptEnd(call, Ended(absl::StatusCode::kOk), Now(), absl::InfiniteFuture());
    CancelLosers(decider, call);
  }
  EXPECT_LE(static_cast<double>(attempts) / kCalls, 1.0 + 0.1 + 10.0 / kCalls);
  EXPECT_GE(static_cast<double>(attempts) / kCalls, 1.09);  // and does use it
}

// The same with a windowed budget: Start() deposits, each hedge takes a
// token when sent (a non-fatal failure costs nothing by itself), so hedges
// stay within the ratio of the calls plus the initial tokens.
TEST_F(HedgingDeciderTest, WindowedBudgetBoundsHedgesByTheCalls) {
  HedgingDecider::Options options = Defaults();
  options.budget.reset();
  WindowedRetryBudget::Options windowed;
  windowed.token_ratio = 0.1;
  windowed.ttl = absl::Seconds(10);
  windowed.initial_tokens = 2;
  options.windowed_budget = windowed;
  options.clock = &clock_;
  HedgingDecider decider(options);
  ASSERT_NE(decider.windowed_budget(), nullptr);
  EXPECT_EQ(decider.budget(), nullptr);
  int attempts = 0;
  constexpr int kCalls = 10000;
  for (int i = 0; i < kCalls; ++i) {
    Call call;
    attempts += decider.Start(call).send;
    clock_.AdvanceTime(absl::Milliseconds(10));
    // One non-fatal failure (its next hedge at once), then the timer.
    const HedgeStep failed = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable),
                                                  Now(), absl::InfiniteFuture());
    attempts += failed.send;
    if (!failed.finished()) attempts += decider.OnTimer(call, Now(), absl::InfiniteFuture()).send;
    if (call.in_flight > 0) {
      decider.OnAttemptEnd(call, Ended(absl::StatusCode::kOk), Now(), absl::InfiniteFuture());
    }
    CancelLosers(decider, call);
  }
  EXPECT_LE(attempts, kCalls + kCalls / 10 + 2);
  EXPECT_GE(static_cast<double>(attempts) / kCalls, 1.09);  // and does use it
}

TEST_F(HedgingDeciderTest, DeadlineAndCancellationEndTheCall) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  EXPECT_FALSE(decider.OnTimer(call, deadline_, deadline_).send);  // no hedge at the deadline
  AttemptOutcome outcome = Ended(absl::StatusCode::kDeadlineExceeded);
  outcome.deadline_passed = true;
  EXPECT_EQ(decider.OnAttemptEnd(call, outcome, deadline_, deadline_).verdict,
            RetryVerdict::kCallDeadline);
  Call cancelled;
  decider.Start(cancelled);
  decider.OnTimer(cancelled, Now(), deadline_);
  outcome = Ended(absl::StatusCode::kCancelled);
  outcome.cancelled = true;
  const HedgeStep step = decider.OnAttemptEnd(cancelled, outcome, Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kCancelled);
  EXPECT_TRUE(step.cancel_timer);
}

TEST_F(HedgingDeciderTest, LocalRejectionStopsHedges) {
  HedgingDecider decider(Defaults());
  Call call;
  decider.Start(call);
  decider.OnTimer(call, Now(), deadline_);
  AttemptOutcome rejected = Ended(absl::StatusCode::kUnavailable);
  rejected.rejected_locally = true;
  HedgeStep step = decider.OnAttemptEnd(call, rejected, Now(), deadline_);
  EXPECT_FALSE(step.finished());
  EXPECT_FALSE(step.send);
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 9.0);  // the hedge's token, no failure's
  step = decider.OnAttemptEnd(call, Ended(absl::StatusCode::kUnavailable), Now(), deadline_);
  EXPECT_EQ(step.verdict, RetryVerdict::kRejectedLocally);
}

TEST_F(HedgingDeciderTest, MaxAttemptsIsClampedToFive) {
  HedgingDecider::Options options = Defaults();
  options.max_attempts = 9;
  EXPECT_EQ(HedgingDecider(options).max_attempts(), HedgingDecider::kMaxAttempts);
}

TEST_F(HedgingDeciderTest, AdaptiveDelayFollowsThePercentileAboveTheFloor) {
  HedgingDecider::Options options = Defaults();
  options.delay = absl::Milliseconds(40);
  options.adaptive_delay = HedgingDecider::AdaptiveDelay{95, absl::Milliseconds(2)};
  HedgingDecider decider(options);
  // Until the window has enough samples: hedgingDelay.
  EXPECT_EQ(decider.Delay(), absl::Milliseconds(40));
  // 95 % at 3 ms, 5 % at 90 ms: p95 is the 3 ms bucket.
  for (int i = 0; i < 1000; ++i) {
    decider.RecordLatency(i % 20 == 0 ? absl::Milliseconds(90) : absl::Milliseconds(3));
  }
  const absl::Duration p95 = decider.Delay();
  EXPECT_GE(p95, absl::Milliseconds(3));
  EXPECT_LE(p95, absl::Milliseconds(3) * 1.19);
  Call call;
  EXPECT_EQ(decider.Start(call).arm_timer, p95);
  // A fast method: the floor.
  HedgingDecider fast(options);
  for (int i = 0; i < 1000; ++i) fast.RecordLatency(absl::Microseconds(100));
  EXPECT_EQ(fast.Delay(), absl::Milliseconds(2));
  // Without adaptiveDelay, latencies are not even kept.
  HedgingDecider fixed(Defaults());
  for (int i = 0; i < 1000; ++i) fixed.RecordLatency(absl::Milliseconds(1));
  EXPECT_EQ(fixed.Delay(), absl::Milliseconds(10));
  EXPECT_EQ(fixed.latencies().samples(), 0);
}

}  // namespace
}  // namespace resilience
