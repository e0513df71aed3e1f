// The timeout interceptor over real channels: the policy's `timeout` for the
// calls the retry interceptor does not take (streams, and unary calls of
// methods that are not retried), and its timers.

#include "src/client_interceptors/attempt_timeout.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/timeout_scheduler.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;

// A method that is not retried gets its `timeout` from the timeout
// interceptor (no re-issue): DEADLINE_EXCEEDED saying so, and the breaker
// records a failure (a hung backend); the next call, answered at once, is
// served. (0.5 s: the same timeout applies to that call, which a busy
// machine under a sanitizer took more than 0.1 s to serve.)
TEST_F(ClientInterceptorsTest, UnaryTimeoutWithoutRetry) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "timeout": "0.5s", "breaker": {"sre": {}}}]})");
  service_.SlowNext(1, absl::Seconds(5));
  const absl::Time start = absl::Now();
  grpc::Status s = Unary();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(s.error_message(),
            "/resilience.test.TestService/Unary: deadline exceeded: the policy's timeout of "
            "500ms ran out");
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(Stats().attempt_timeouts, 0);
  EXPECT_EQ(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary")->counts.failure, 1);
  const grpc::Status after = Unary();
  EXPECT_TRUE(after.ok()) << after.error_code() << ": " << after.error_message();
}

// Calls that end in time cancel their timers: none is left pending to wake
// the scheduler's thread later, whatever the call type and stub flavour.
TEST_F(ClientInterceptorsTest, CallsThatEndInTimeLeaveNoTimerBehind) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "timeout": "30s", "breaker": {"sre": {}}}]})");
  const size_t before = TimeoutScheduler::Global().pending();
  for (CallType type : {CallType::kUnary, CallType::kClientStream, CallType::kServerStream,
                        CallType::kBidi}) {
    for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
      SCOPED_TRACE(absl::StrCat(Name(type), " ", Name(flavour)));
      EXPECT_TRUE(MakeCall(*stub_, type, flavour).status.ok());
      EXPECT_EQ(TimeoutScheduler::Global().pending(), before);
    }
  }
  EXPECT_EQ(service_.handled(), 12);
}

// The policy's timeout applies when the caller set no deadline.
TEST_F(ClientInterceptorsTest, DefaultDeadlineFromThePolicy) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "timeout": "0.15s"}]})");
  service_.SlowNext(1, absl::Seconds(2));
  const absl::Time start = absl::Now();
  EXPECT_EQ(Unary(nullptr, absl::InfiniteDuration()).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

// Streaming calls: the policy's timeout cancels the call and the caller
// sees DEADLINE_EXCEEDED; the breaker records a failure, not a cancellation.
TEST_F(ClientInterceptorsTest, StreamingTimeoutGivesDeadlineExceeded) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "timeout": "0.1s", "breaker": {"sre": {}}}]})");
  for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
    SCOPED_TRACE(Name(flavour));
    service_.SlowNext(1, absl::Seconds(2));
    const absl::Time start = absl::Now();
    CallResult r = MakeCall(*stub_, CallType::kServerStream, flavour);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_THAT(r.status.error_message(),
                HasSubstr("ServerStream: deadline exceeded: the policy's timeout of 100ms ran out"));
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  }
  const BreakerSnapshot b =
      *resilience_->BreakerSnapshotOf("/resilience.test.TestService/ServerStream");
  EXPECT_EQ(b.counts.failure, 3);
  // Streams are not retried.
  EXPECT_EQ(service_.handled(), 3);
}

}  // namespace
}  // namespace resilience::testing
