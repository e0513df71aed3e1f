// RetryDecider: every way an attempt's end decides the call, on simulated
// time (the decider reads no clock but a windowed budget's, a
// SimulatedClock here) with a fixed jitter draw.

#include "src/retry/retry_decider.h"

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/core/fake_random.h"

namespace resilience {
namespace {

// The method budget's tokens and verdict (-1 and false without one).
double Tokens(const RetryBudget* budget) { return budget == nullptr ? -1 : budget->tokens(); }
[[maybe_unused]] bool Allows(const RetryBudget* budget) {
  return budget != nullptr && budget->AllowRetry();
}

using ::resilience::testing::FakeRandom;

constexpr absl::Time kNow = absl::FromUnixSeconds(1000);

class RetryDeciderTest : public ::testing::Test {
 protected:
  // maxAttempts 3, UNAVAILABLE and DEADLINE_EXCEEDED retryable, backoff
  // 100ms x2 up to 1s; the draw 0.5 puts proportional jitter in the middle
  // (no jitter). Budget 10 tokens, ratio 0.1.
  static RetryDecider::Options Defaults() {
    RetryDecider::Options options;
    options.max_attempts = 3;
    options.retryable_codes = {absl::StatusCode::kUnavailable,
                               absl::StatusCode::kDeadlineExceeded};
    options.backoff = {absl::Milliseconds(100), absl::Seconds(1), 2.0, 0.2, false};
    options.budget = RetryBudget::Options{10, 0.1};
    return options;
  }

  static AttemptOutcome Failed(absl::StatusCode code) {
    AttemptOutcome outcome;
    outcome.code = code;
    return outcome;
  }

  FakeRandom random_{0.5};
};

TEST_F(RetryDeciderTest, SuccessEndsTheCall) {
  RetryDecider decider(Defaults(), random_);
  const RetryDecision d = decider.Decide(1, Failed(absl::StatusCode::kOk), kNow,
                                         absl::InfiniteFuture());
  EXPECT_EQ(d.verdict, RetryVerdict::kSucceeded);
  EXPECT_FALSE(d.attempt_timed_out);
}

TEST_F(RetryDeciderTest, RetryableFailureWaitsTheBackoff) {
  RetryDecider decider(Defaults(), random_);
  RetryDecision d = decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow,
                                   absl::InfiniteFuture());
  EXPECT_EQ(d.verdict, RetryVerdict::kRetry);
  EXPECT_EQ(d.delay, absl::Milliseconds(100));
  d = decider.Decide(2, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture());
  EXPECT_EQ(d.verdict, RetryVerdict::kRetry);
  EXPECT_EQ(d.delay, absl::Milliseconds(200));
}

TEST_F(RetryDeciderTest, MaxAttemptsEndsTheCall) {
  RetryDecider decider(Defaults(), random_);
  EXPECT_EQ(decider
                .Decide(3, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
                .verdict,
            RetryVerdict::kAttemptsExhausted);
}

TEST_F(RetryDeciderTest, CodesOutsideTheListAreNotRetried) {
  RetryDecider decider(Defaults(), random_);
  for (absl::StatusCode code : {absl::StatusCode::kInternal, absl::StatusCode::kNotFound,
                                absl::StatusCode::kResourceExhausted}) {
    EXPECT_EQ(decider.Decide(1, Failed(code), kNow, absl::InfiniteFuture()).verdict,
              RetryVerdict::kNotRetryable)
        << absl::StatusCodeToString(code);
  }
  EXPECT_FALSE(decider.IsRetryable(absl::StatusCode::kOk));
}

TEST_F(RetryDeciderTest, LocalRejectionIsNeverRetriedAndCostsNoToken) {
  RetryDecider decider(Defaults(), random_);
  AttemptOutcome outcome = Failed(absl::StatusCode::kUnavailable);
  outcome.rejected_locally = true;
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(decider.Decide(1, outcome, kNow, absl::InfiniteFuture()).verdict,
              RetryVerdict::kRejectedLocally);
  }
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 10.0);
}

TEST_F(RetryDeciderTest, CancellationEndsTheCall) {
  RetryDecider decider(Defaults(), random_);
  AttemptOutcome outcome = Failed(absl::StatusCode::kCancelled);
  outcome.cancelled = true;
  EXPECT_EQ(decider.Decide(1, outcome, kNow, absl::InfiniteFuture()).verdict,
            RetryVerdict::kCancelled);
  // Even when the attempt itself failed retryably as the caller cancelled.
  outcome.code = absl::StatusCode::kUnavailable;
  EXPECT_EQ(decider.Decide(1, outcome, kNow, absl::InfiniteFuture()).verdict,
            RetryVerdict::kCancelled);
}

TEST_F(RetryDeciderTest, CallDeadlineEndsTheCall) {
  RetryDecider decider(Defaults(), random_);
  AttemptOutcome outcome = Failed(absl::StatusCode::kDeadlineExceeded);
  outcome.deadline_passed = true;
  const RetryDecision d = decider.Decide(1, outcome, kNow, kNow);
  EXPECT_EQ(d.verdict, RetryVerdict::kCallDeadline);
  EXPECT_FALSE(d.attempt_timed_out);
}

TEST_F(RetryDeciderTest, PerAttemptTimeoutIsRetriedAndSaysSo) {
  RetryDecider decider(Defaults(), random_);
  AttemptOutcome outcome = Failed(absl::StatusCode::kDeadlineExceeded);
  outcome.deadline_passed = true;
  outcome.per_attempt_deadline = true;
  RetryDecision d = decider.Decide(1, outcome, kNow, kNow + absl::Seconds(10));
  EXPECT_EQ(d.verdict, RetryVerdict::kRetry);
  EXPECT_TRUE(d.attempt_timed_out);
  d = decider.Decide(3, outcome, kNow, kNow + absl::Seconds(10));
  EXPECT_EQ(d.verdict, RetryVerdict::kAttemptsExhausted);
  EXPECT_TRUE(d.attempt_timed_out);
}

// A server's DEADLINE_EXCEEDED (our deadline not passed) is an answer like
// any other: retried when listed.
TEST_F(RetryDeciderTest, ServerDeadlineExceededIsAnAnswer) {
  RetryDecider decider(Defaults(), random_);
  const RetryDecision d = decider.Decide(1, Failed(absl::StatusCode::kDeadlineExceeded), kNow,
                                         kNow + absl::Seconds(10));
  EXPECT_EQ(d.verdict, RetryVerdict::kRetry);
  EXPECT_FALSE(d.attempt_timed_out);
}

TEST_F(RetryDeciderTest, PushbackReplacesTheBackoff) {
  RetryDecider decider(Defaults(), random_);
  AttemptOutcome outcome = Failed(absl::StatusCode::kUnavailable);
  outcome.pushback = Pushback::Parse("750");
  const RetryDecision d = decider.Decide(1, outcome, kNow, absl::InfiniteFuture());
  EXPECT_EQ(d.verdict, RetryVerdict::kRetry);
  EXPECT_EQ(d.delay, absl::Milliseconds(750));
}

TEST_F(RetryDeciderTest, NegativeOrMalformedPushbackStops) {
  RetryDecider decider(Defaults(), random_);
  for (const char* value : {"-1", "abc", "", "12ms", "1.5", " 5"}) {
    AttemptOutcome outcome = Failed(absl::StatusCode::kUnavailable);
    outcome.pushback = Pushback::Parse(value);
    EXPECT_EQ(decider.Decide(1, outcome, kNow, absl::InfiniteFuture()).verdict,
              RetryVerdict::kPushbackStop)
        << "'" << value << "'";
  }
}

TEST_F(RetryDeciderTest, ParsePushback) {
  EXPECT_EQ(Pushback::Parse("0").kind, Pushback::Kind::kDelay);
  EXPECT_EQ(Pushback::Parse("0").delay, absl::ZeroDuration());
  EXPECT_EQ(Pushback::Parse("1000").delay, absl::Seconds(1));
  EXPECT_EQ(Pushback::Parse("99999999999999999999").kind, Pushback::Kind::kStop);  // overflow
  EXPECT_EQ(Pushback::Parse("-5").kind, Pushback::Kind::kStop);
}

TEST_F(RetryDeciderTest, BudgetStopsRetriesAndSuccessesRefillIt) {
  RetryDecider decider(Defaults(), random_);
  // 10 tokens; each retryable failure costs one; retries need more than 5.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(decider
                  .Decide(1, Failed(absl::StatusCode::kUnavailable), kNow,
                          absl::InfiniteFuture())
                  .verdict,
              RetryVerdict::kRetry);
  }
  EXPECT_EQ(
      decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
          .verdict,
      RetryVerdict::kBudgetSpent);
  // Non-retryable failures cost nothing.
  decider.Decide(1, Failed(absl::StatusCode::kInternal), kNow, absl::InfiniteFuture());
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 5.0);
  decider.Decide(1, Failed(absl::StatusCode::kOk), kNow, absl::InfiniteFuture());
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 5.1);
}

// gRPC's retryThrottling (gRFC A6): one throttle for the channel, which
// every method's calls feed. Another method's failures stop this one's
// retries; its successes let them go again. A pushback costs a token
// whatever the code; a local rejection costs nothing.
TEST_F(RetryDeciderTest, ChannelThrottleIsSharedByEveryMethod) {
  RetryBudget throttle(4, 0.5);  // retries while tokens > 2
  RetryDecider::Options options = Defaults();
  options.budget.reset();  // the throttle alone
  options.throttle = &throttle;
  RetryDecider get(options, random_);
  RetryDecider store(options, random_);
  EXPECT_EQ(get.budget(), nullptr);
  EXPECT_EQ(
      store.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
          .verdict,
      RetryVerdict::kRetry);  // 4 -> 3
  AttemptOutcome pushed = Failed(absl::StatusCode::kResourceExhausted);  // not retryable
  pushed.pushback = Pushback::Parse("10");
  EXPECT_EQ(store.Decide(1, pushed, kNow, absl::InfiniteFuture()).verdict,
            RetryVerdict::kNotRetryable);  // 3 -> 2
  AttemptOutcome local = Failed(absl::StatusCode::kUnavailable);
  local.rejected_locally = true;
  store.Decide(1, local, kNow, absl::InfiniteFuture());
  store.Decide(1, Failed(absl::StatusCode::kInternal), kNow, absl::InfiniteFuture());
  EXPECT_DOUBLE_EQ(throttle.tokens(), 2.0);
  EXPECT_EQ(get.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
                .verdict,
            RetryVerdict::kBudgetSpent);  // 2 -> 1
  // Store's successes give back 0.5 each, up to the bucket's 4.
  for (int i = 0; i < 8; ++i) {
    store.Decide(1, Failed(absl::StatusCode::kOk), kNow, absl::InfiniteFuture());
  }
  EXPECT_DOUBLE_EQ(throttle.tokens(), 4.0);
  EXPECT_EQ(get.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
                .verdict,
            RetryVerdict::kRetry);  // 4 -> 3
}

// A failure on an endpoint known bad (its own breaker open, the service not
// failing) takes no token of the method's budget: the retry goes to another
// endpoint. The channel's throttle (gRPC's meaning) is charged as usual.
TEST_F(RetryDeciderTest, AKnownBadEndpointsFailuresSpareTheBudget) {
  RetryBudget throttle(100, 0.1);
  RetryDecider::Options options = Defaults();  // budget 10
  options.throttle = &throttle;
  RetryDecider decider(options, random_);
  AttemptOutcome bad = Failed(absl::StatusCode::kUnavailable);
  bad.endpoint_known_bad = true;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(decider.Decide(1, bad, kNow, absl::InfiniteFuture()).verdict, RetryVerdict::kRetry)
        << i;
  }
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 10.0);
  EXPECT_DOUBLE_EQ(throttle.tokens(), 80.0);
  // Not known bad: charged again.
  decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture());
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 9.0);
}

// Issue 40 item 2: a budget spent (by failures before the endpoint was
// known bad, or by an earlier outage) does not refuse the retry after a
// known-bad endpoint's failure; other failures are still refused.
TEST_F(RetryDeciderTest, AKnownBadEndpointsRetryIsNotRefusedByASpentBudget) {
  RetryDecider decider(Defaults(), random_);  // budget 10, retries while > 5
  for (int i = 0; i < 5; ++i) {
    decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture());
  }
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 5.0);
  EXPECT_EQ(
      decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
          .verdict,
      RetryVerdict::kBudgetSpent);
  AttemptOutcome bad = Failed(absl::StatusCode::kUnavailable);
  bad.endpoint_known_bad = true;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(decider.Decide(1, bad, kNow, absl::InfiniteFuture()).verdict, RetryVerdict::kRetry)
        << i;
  }
  EXPECT_DOUBLE_EQ(Tokens(decider.budget()), 4.0);
  // At once (round_robin sends it elsewhere; a backoff would only let the
  // other callers' picks bring it back to the bad endpoint), unless the
  // server asked for a pushback.
  EXPECT_EQ(decider.Decide(1, bad, kNow, absl::InfiniteFuture()).delay, absl::ZeroDuration());
  bad.pushback = Pushback::Parse("30");
  EXPECT_EQ(decider.Decide(1, bad, kNow, absl::InfiniteFuture()).delay, absl::Milliseconds(30));
  // maxAttempts still bounds the call.
  EXPECT_EQ(decider.Decide(3, bad, kNow, absl::InfiniteFuture()).verdict,
            RetryVerdict::kAttemptsExhausted);
}

// Re-picks (failures on a known-bad endpoint gRPC's load balancer chose,
// counted by the call) do not use up maxAttempts: the third attempt of a
// call whose first two were re-picks is retried, at once.
TEST_F(RetryDeciderTest, RepicksDoNotUseUpMaxAttempts) {
  RetryDecider decider(Defaults(), random_);  // maxAttempts 3
  AttemptOutcome bad = Failed(absl::StatusCode::kUnavailable);
  bad.endpoint_known_bad = true;
  bad.repicks = 1;
  RetryDecision decision = decider.Decide(3, bad, kNow, absl::InfiniteFuture());
  EXPECT_EQ(decision.verdict, RetryVerdict::kRetry);
  EXPECT_EQ(decision.delay, absl::ZeroDuration());
  bad.repicks = 2;
  EXPECT_EQ(decider.Decide(4, bad, kNow, absl::InfiniteFuture()).verdict, RetryVerdict::kRetry);
  EXPECT_EQ(decider.Decide(5, bad, kNow, absl::InfiniteFuture()).verdict,
            RetryVerdict::kAttemptsExhausted);
  // Any other failure counts as before.
  AttemptOutcome other = Failed(absl::StatusCode::kUnavailable);
  EXPECT_EQ(decider.Decide(3, other, kNow, absl::InfiniteFuture()).verdict,
            RetryVerdict::kAttemptsExhausted);
}

// With both, a retry needs the method's budget and the channel's throttle.
TEST_F(RetryDeciderTest, BudgetAndThrottleMustBothAllow) {
  RetryBudget throttle(100, 0.1);
  RetryDecider::Options options = Defaults();  // budget 10
  options.throttle = &throttle;
  RetryDecider decider(options, random_);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow,
                             absl::InfiniteFuture())
                  .verdict,
              RetryVerdict::kRetry);
  }
  EXPECT_EQ(
      decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
          .verdict,
      RetryVerdict::kBudgetSpent);  // the budget at 5; the throttle at 95
  EXPECT_DOUBLE_EQ(throttle.tokens(), 95.0);
}

TEST_F(RetryDeciderTest, NoBackoffThatEndsAtOrAfterTheDeadline) {
  RetryDecider decider(Defaults(), random_);
  RetryDecision d = decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow,
                                   kNow + absl::Milliseconds(100));
  EXPECT_EQ(d.verdict, RetryVerdict::kBackoffPastDeadline);
  EXPECT_EQ(d.delay, absl::Milliseconds(100));
  d = decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow,
                     kNow + absl::Milliseconds(101));
  EXPECT_EQ(d.verdict, RetryVerdict::kRetry);
}

TEST_F(RetryDeciderTest, OneAttemptNeverRetries) {
  RetryDecider::Options options = Defaults();
  options.max_attempts = 0;  // clamped to 1
  RetryDecider decider(options, random_);
  EXPECT_EQ(decider.max_attempts(), 1);
  EXPECT_EQ(
      decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
          .verdict,
      RetryVerdict::kAttemptsExhausted);
}

// A windowed retryBudget (ttl): every call's first attempt deposits the
// ratio, every retry takes a token (a known-bad endpoint's failure too), a
// retry that does not go (past the deadline) takes none, and nothing else
// touches it.
TEST_F(RetryDeciderTest, WindowedBudgetIsFundedByCallsAndSpentByRetries) {
  SimulatedClock clock;
  RetryDecider::Options options = Defaults();
  options.budget.reset();
  WindowedRetryBudget::Options windowed;
  windowed.token_ratio = 0.1;
  windowed.ttl = absl::Seconds(10);
  windowed.initial_tokens = 1;
  options.windowed_budget = windowed;
  options.clock = &clock;
  RetryDecider decider(options, random_);
  ASSERT_NE(decider.windowed_budget(), nullptr);
  EXPECT_EQ(decider.budget(), nullptr);
  WindowedRetryBudget& budget = *decider.windowed_budget();
  AttemptOutcome bad = Failed(absl::StatusCode::kUnavailable);
  bad.endpoint_known_bad = true;
  // The initial token, and the call's own deposit (1.1 tokens): one retry.
  EXPECT_EQ(decider.Decide(1, bad, kNow, absl::InfiniteFuture()).verdict, RetryVerdict::kRetry);
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.1);
  // Its retry's failure deposits nothing and finds no token.
  EXPECT_EQ(decider.Decide(2, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
                .verdict,
            RetryVerdict::kBudgetSpent);
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.1);
  // Eight successful calls and a non-retryable failure: 1.0 token.
  for (int i = 0; i < 8; ++i) {
    decider.Decide(1, Failed(absl::StatusCode::kOk), kNow, absl::InfiniteFuture());
  }
  decider.Decide(1, Failed(absl::StatusCode::kInternal), kNow, absl::InfiniteFuture());
  EXPECT_DOUBLE_EQ(budget.tokens(), 1.0);
  // A retry whose backoff would pass the deadline does not take it; the
  // next call's does.
  EXPECT_EQ(decider.Decide(2, Failed(absl::StatusCode::kUnavailable), kNow,
                           kNow + absl::Milliseconds(50))
                .verdict,
            RetryVerdict::kBackoffPastDeadline);
  EXPECT_DOUBLE_EQ(budget.tokens(), 1.0);
  EXPECT_EQ(decider.Decide(2, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
                .verdict,
            RetryVerdict::kRetry);
  EXPECT_DOUBLE_EQ(budget.tokens(), 0.0);
}

// With the channel's throttle too, a retry needs both, and a retry the
// throttle refuses takes no token of the windowed budget.
TEST_F(RetryDeciderTest, WindowedBudgetAndThrottleMustBothAllow) {
  SimulatedClock clock;
  RetryBudget throttle(4, 0.1);  // retries while tokens > 2
  RetryDecider::Options options = Defaults();
  options.budget.reset();
  WindowedRetryBudget::Options windowed;
  windowed.initial_tokens = 5;
  options.windowed_budget = windowed;
  options.clock = &clock;
  options.throttle = &throttle;
  RetryDecider decider(options, random_);
  EXPECT_EQ(decider.Decide(1, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
                .verdict,
            RetryVerdict::kRetry);  // throttle 3, budget 5.1 - 1
  EXPECT_EQ(decider.Decide(2, Failed(absl::StatusCode::kUnavailable), kNow, absl::InfiniteFuture())
                .verdict,
            RetryVerdict::kBudgetSpent);  // throttle 2
  EXPECT_DOUBLE_EQ(decider.windowed_budget()->tokens(), 4.1);
}

}  // namespace
}  // namespace resilience
