// A retried call's attempt deadlines on simulated time: the deadline each
// attempt carries is read exactly from the attempt's ClientContext
// (AttemptDeadlineRecorder) and the backoff between attempts from the
// timer the call set (SimulatedCallTimers), so "the attempt is cut at
// perAttemptTimeout, counted from its own start", "the caller's deadline
// caps it", "the policy's timeout is one deadline for all attempts" and
// "a pushback sets the backoff" are exact equalities, not elapsed-time
// bounds. That gRPC enforces these deadlines on real time is shown by the
// real-time tests in retried_unary_call_deadlines_test.cc (generous bounds).

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client_interceptors/call_timing_fixture.h"

namespace resilience::testing {
namespace {

using ::testing::ElementsAre;

// A policy for every method of the test service: `method_fields` (each
// followed by a comma) and a retryPolicy on UNAVAILABLE with
// `retry_fields`, under a retry budget too large to interfere.
std::string Policy(absl::string_view method_fields, absl::string_view retry_fields) {
  return absl::StrCat(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}], )",
      method_fields, R"( "retryPolicy": {)", retry_fields,
      R"(, "retryableStatusCodes": ["UNAVAILABLE"]}}],
      "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})");
}

// perAttemptTimeout 100 ms, backoffs 20 ms then 40 ms without jitter: each
// attempt's deadline is its own start on the clock plus 100 ms, while the
// caller's deadline is seconds away.
TEST_F(CallTimingTest, PerAttemptDeadlineCountsFromEachAttemptsStart) {
  Connect(Policy("", R"("maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "1s",
      "backoffMultiplier": 2, "jitter": 0, "perAttemptTimeout": "0.1s")"));
  for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
    SCOPED_TRACE(Name(flavour));
    attempts_->Clear();
    service_.FailNext(2);
    const absl::Time t0 = clock_.WallNow();
    grpc::Status status;
    std::thread call = Start(flavour, &status);
    ASSERT_EQ(attempts_->Await(1).size(), 1u);
    ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(20)));
    timers_.Advance(absl::Milliseconds(20));
    ASSERT_EQ(attempts_->Await(2).size(), 2u);
    ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(40)));
    timers_.Advance(absl::Milliseconds(40));
    call.join();
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_THAT(attempts_->Await(3),
                ElementsAre(t0 + absl::Milliseconds(100), t0 + absl::Milliseconds(120),
                            t0 + absl::Milliseconds(160)));
  }
}

// An attempt whose perAttemptTimeout would end after the caller's deadline
// gets the caller's deadline: after a 9.95 s backoff, 100 ms would reach
// past the deadline of 10 s.
TEST_F(CallTimingTest, CallersDeadlineCapsTheAttemptsDeadline) {
  Connect(Policy("", R"("maxAttempts": 2, "initialBackoff": "9.95s", "maxBackoff": "10s",
      "backoffMultiplier": 1, "jitter": 0, "perAttemptTimeout": "0.1s")"));
  service_.FailNext(1);
  const absl::Time t0 = clock_.WallNow();
  const absl::Time caller_deadline = t0 + absl::Seconds(10);
  grpc::Status status;
  std::thread call = Start(Flavour::kSync, &status, caller_deadline);
  ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(9950)));
  timers_.Advance(absl::Milliseconds(9950));
  call.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(attempts_->Await(2), ElementsAre(t0 + absl::Milliseconds(100), caller_deadline));
}

// The policy's `timeout` is the whole call's deadline (gRPC's meaning):
// every attempt carries the same deadline, set when the call started,
// however late the attempt starts.
TEST_F(CallTimingTest, PolicyTimeoutIsOneDeadlineForEveryAttempt) {
  Connect(Policy(R"("timeout": "5s",)",
                 R"("maxAttempts": 3, "initialBackoff": "0.5s", "maxBackoff": "0.5s",
      "backoffMultiplier": 1, "jitter": 0)"));
  service_.FailNext(2);
  const absl::Time t0 = clock_.WallNow();
  grpc::Status status;
  std::thread call = Start(Flavour::kAsync, &status);
  for (int backoff = 0; backoff < 2; ++backoff) {
    ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(500)));
    timers_.Advance(absl::Milliseconds(500));
  }
  call.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  const absl::Time call_deadline = t0 + absl::Seconds(5);
  EXPECT_THAT(attempts_->Await(3), ElementsAre(call_deadline, call_deadline, call_deadline));
}

// A server pushback of 150 ms replaces the policy's backoff exactly: the
// second attempt goes out when the clock passes 150 ms, not before.
TEST_F(CallTimingTest, ServerPushbackSetsTheBackoff) {
  Connect(Policy("", R"("maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "1s",
      "backoffMultiplier": 2, "jitter": 0.2)"));
  service_.FailNext(1, grpc::StatusCode::UNAVAILABLE, "150");
  grpc::Status status;
  std::thread call = Start(Flavour::kCallback, &status);
  ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(150)));
  timers_.Advance(absl::Milliseconds(149));
  EXPECT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(1)));  // not yet
  EXPECT_EQ(service_.handled(), 1);
  timers_.Advance(absl::Milliseconds(1));
  call.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(service_.handled(), 2);
}

}  // namespace
}  // namespace resilience::testing
