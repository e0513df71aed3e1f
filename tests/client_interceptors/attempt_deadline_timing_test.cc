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

// perAttemptTimeout 30 s, backoffs 20 ms then 40 ms without jitter: each
// attempt's deadline is its own start on the clock plus 30 s, while the
// caller's deadline is a minute away. (gRPC enforces these deadlines on real
// time, and the simulated clock starts at the real time: every deadline in
// these tests lies well in the real future, so that a loaded machine's slow
// answer is never cut by one.)
TEST_F(CallTimingTest, PerAttemptDeadlineCountsFromEachAttemptsStart) {
  Connect(Policy("", R"("maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "1s",
      "backoffMultiplier": 2, "jitter": 0, "perAttemptTimeout": "30s")"));
  for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
    SCOPED_TRACE(Name(flavour));
    attempts_->Clear();
    service_.FailNext(2);
    const absl::Time t0 = clock_.WallNow();
    grpc::Status status;
    std::thread call = Start(flavour, &status, t0 + absl::Minutes(1));
    ASSERT_EQ(attempts_->Await(1).size(), 1u);
    ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(20)));
    timers_.Advance(absl::Milliseconds(20));
    ASSERT_EQ(attempts_->Await(2).size(), 2u);
    ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(40)));
    timers_.Advance(absl::Milliseconds(40));
    call.join();
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_THAT(attempts_->Await(3),
                ElementsAre(t0 + absl::Seconds(30), t0 + absl::Milliseconds(30020),
                            t0 + absl::Milliseconds(30060)));
  }
}

// An attempt whose perAttemptTimeout would end after the caller's deadline
// gets the caller's deadline: after a 40 s backoff, 20 s would reach past
// the deadline of 50 s.
TEST_F(CallTimingTest, CallersDeadlineCapsTheAttemptsDeadline) {
  Connect(Policy("", R"("maxAttempts": 2, "initialBackoff": "40s", "maxBackoff": "40s",
      "backoffMultiplier": 1, "jitter": 0, "perAttemptTimeout": "20s")"));
  service_.FailNext(1);
  const absl::Time t0 = clock_.WallNow();
  const absl::Time caller_deadline = t0 + absl::Seconds(50);
  grpc::Status status;
  std::thread call = Start(Flavour::kSync, &status, caller_deadline);
  ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Seconds(40)));
  timers_.Advance(absl::Seconds(40));
  call.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(attempts_->Await(2), ElementsAre(t0 + absl::Seconds(20), caller_deadline));
}

// The policy's `timeout` is the whole call's deadline (gRPC's meaning):
// every attempt carries the same deadline, set when the call started,
// however late the attempt starts.
TEST_F(CallTimingTest, PolicyTimeoutIsOneDeadlineForEveryAttempt) {
  Connect(Policy(R"("timeout": "30s",)",
                 R"("maxAttempts": 3, "initialBackoff": "0.5s", "maxBackoff": "0.5s",
      "backoffMultiplier": 1, "jitter": 0)"));
  service_.FailNext(2);
  const absl::Time t0 = clock_.WallNow();
  grpc::Status status;
  std::thread call = Start(Flavour::kAsync, &status, t0 + absl::Minutes(1));
  for (int backoff = 0; backoff < 2; ++backoff) {
    ASSERT_THAT(timers_.AwaitPending(1), ElementsAre(absl::Milliseconds(500)));
    timers_.Advance(absl::Milliseconds(500));
  }
  call.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
  const absl::Time call_deadline = t0 + absl::Seconds(30);
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
