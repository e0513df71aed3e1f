// The client chain's timing on simulated time: a retried call's backoff
// delays, a hedged call's hedging delay, and a single-attempt call's timeout
// are set on the injected Clock (ResilientCallFactory), so a test reads each
// timer's delay exactly and fires it by moving a SimulatedClock; nothing
// sleeps, no bound is widened for a loaded machine.

#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client_interceptors/call_timing_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using ::testing::UnorderedElementsAre;
using ::testing::HasSubstr;

// Backoff delays: 20 ms then 40 ms, +-20% jitter, each read exactly from the
// timer the call set; the call goes on only when the clock passes it.
TEST_F(CallTimingTest, BackoffDelaysFollowThePolicyForEveryStubFlavour) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "1s",
                      "backoffMultiplier": 2, "jitter": 0.2,
                      "retryableStatusCodes": ["UNAVAILABLE"]}}],
      "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})");
  int handled = 0;
  for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
    SCOPED_TRACE(Name(flavour));
    service_.FailNext(2);
    grpc::Status status;
    std::thread call = Start(flavour, &status);
    const std::vector<absl::Duration> first = timers_.AwaitPending(1);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_GE(first[0], absl::Milliseconds(16));
    EXPECT_LE(first[0], absl::Milliseconds(24));
    EXPECT_EQ(service_.handled(), handled + 1);  // waiting: no second attempt yet
    timers_.Advance(first[0]);
    const std::vector<absl::Duration> second = timers_.AwaitPending(1);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_GE(second[0], absl::Milliseconds(32));
    EXPECT_LE(second[0], absl::Milliseconds(48));
    EXPECT_EQ(service_.handled(), handled + 2);
    timers_.Advance(second[0]);
    call.join();
    EXPECT_TRUE(status.ok()) << status.error_message();
    handled += 3;
    EXPECT_EQ(service_.handled(), handled);
  }
  EXPECT_EQ(resilience_->Stats(kUnary).retries, 6);
}

// A cancelled backoff ends the call at once, CANCELLED "during a retry
// backoff", however long the backoff.
TEST_F(CallTimingTest, CancellingDuringABackoffEndsTheCall) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "5s", "maxBackoff": "5s",
                      "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  service_.FailNext(1);
  grpc::ClientContext context;
  grpc::Status status;
  std::thread call([&] { status = UnaryCall(*stub_, Flavour::kSync, &context); });
  ASSERT_EQ(timers_.AwaitPending(1).size(), 1u);
  context.TryCancel();
  call.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_THAT(status.error_message(), HasSubstr("during a retry backoff"));
  EXPECT_EQ(service_.handled(), 1);
}

// The hedge goes out exactly hedgingDelay after the first attempt, and not
// before: the first attempt hangs, the hedge answers.
TEST_F(CallTimingTest, HedgeGoesOutAtTheHedgingDelay) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
      "method": "Unary"}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s"},
      "retryBudget": {"maxTokens": 1000, "tokenRatio": 0.1}}]})");
  service_.ScriptAttempt("", absl::Seconds(20));  // the first attempt hangs
  int handled = 0;
  for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
    SCOPED_TRACE(Name(flavour));
    grpc::Status status;
    std::thread call = Start(flavour, &status);
    const std::vector<absl::Duration> delay = timers_.AwaitPending(1);
    ASSERT_EQ(delay.size(), 1u);
    EXPECT_EQ(delay[0], absl::Milliseconds(50));
    // The first attempt's handler has started before the hedge goes out: a
    // loser cancelled while still on its way never reaches the handler, and
    // the hedge would then be the call's only attempt the server saw.
    ASSERT_TRUE(Eventually([&] { return service_.handled() == handled + 1; }));
    timers_.Advance(absl::Milliseconds(49));
    EXPECT_EQ(timers_.AwaitPending(1).size(), 1u);  // not yet
    timers_.Advance(absl::Milliseconds(1));
    call.join();
    EXPECT_TRUE(status.ok()) << status.error_message();
    handled += 2;
  }
  // Each call's first attempt was cancelled (the loser) and its hedge
  // carried the attempt metadata; the log is in order of the handlers' ends.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (service_.cancelled_seen() < 3 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(service_.cancelled_seen(), 3);
  std::vector<std::string> attempts;
  for (const AttemptRecord& r : service_.Log()) attempts.push_back(r.retry_attempt);
  EXPECT_THAT(attempts, UnorderedElementsAre("", "1", "", "1", "", "1"));
}

// A single-attempt call's timeout (the policy's `timeout`) fires when the
// clock passes it, not before: the call ends DEADLINE_EXCEEDED in the
// chain's words while the server would still take 20 s.
TEST_F(CallTimingTest, SingleAttemptTimeoutFiresOnTheClock) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "timeout": "0.2s"}]})");
  service_.SlowNext(1, absl::Seconds(20));
  grpc::Status status;
  std::thread call = Start(Flavour::kAsync, &status);
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (scheduler_.pending() == 0 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_EQ(scheduler_.pending(), 1u);
  clock_.AdvanceTime(absl::Milliseconds(199));
  scheduler_.Wake();
  EXPECT_EQ(scheduler_.pending(), 1u);  // not yet due
  clock_.AdvanceTime(absl::Milliseconds(1));
  scheduler_.Wake();
  call.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(status.error_message(), HasSubstr("the policy's timeout of 200ms ran out"));
  EXPECT_EQ(scheduler_.pending(), 0u);
}

}  // namespace
}  // namespace resilience::testing
