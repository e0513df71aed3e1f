// RetriedUnaryCall over real channels: retries for every stub flavour,
// backoff, what is never retried, pushback and retry budgets (deadlines and
// per-attempt timeouts are in retried_unary_call_deadlines_test.cc; the
// single-attempt timeout in attempt_timeout_test.cc).

#include "src/client_interceptors/retried_unary_call.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "gmock/gmock.h"
#include "grpcpp/completion_queue.h"
#include "gtest/gtest.h"
#include "src/client_interceptors/breaker_stage.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/core/simulated_clock.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Retry up to 3 attempts on UNAVAILABLE, 20 ms then 40 ms (+-20%), with a
// retry budget large enough not to interfere (it has a test of its own).
constexpr char kRetry[] = R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "1s",
                    "backoffMultiplier": 2, "jitter": 0.2,
                    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
    "breaker": {"sre": {}}}],
    "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})";

// A unary call through the async completion-queue stub.
grpc::Status AsyncUnary(resilience::test::TestService::Stub& stub, grpc::ClientContext* context) {
  grpc::CompletionQueue cq;
  resilience::test::Req request;
  resilience::test::Resp response;
  grpc::Status status;
  auto rpc = stub.AsyncUnary(context, request, &cq);
  rpc->Finish(&response, &status, reinterpret_cast<void*>(1));
  internal_calls::Await(cq, 1);
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  return status;
}

// A unary call through the callback stub.
grpc::Status CallbackUnary(resilience::test::TestService::Stub& stub,
                           grpc::ClientContext* context) {
  resilience::test::Req request;
  resilience::test::Resp response;
  grpc::Status status;
  absl::Notification done;
  stub.async()->Unary(context, &request, &response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(15)));
  return status;
}

// Succeeds after N-1 retryable failures, identically for sync, async and
// callback stubs; attempts carry the retry metadata and the caller's own.
TEST_F(ClientInterceptorsTest, SucceedsAfterRetryableFailuresForEveryStubFlavour) {
  Connect(kRetry);
  for (Flavour flavour : {Flavour::kSync, Flavour::kAsync, Flavour::kCallback}) {
    SCOPED_TRACE(Name(flavour));
    const size_t before = service_.Log().size();
    service_.FailNext(2);
    grpc::ClientContext context;
    context.AddMetadata("x-custom", "mine");
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    grpc::Status s;
    switch (flavour) {
      case Flavour::kSync: s = Unary(&context, absl::InfiniteDuration()); break;
      case Flavour::kAsync: s = AsyncUnary(*stub_, &context); break;
      case Flavour::kCallback: s = CallbackUnary(*stub_, &context); break;
    }
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<AttemptRecord> log = service_.Log();
    ASSERT_EQ(log.size(), before + 3);
    EXPECT_EQ(log[before].retry_attempt, "");
    EXPECT_EQ(log[before + 1].retry_attempt, "1");
    EXPECT_EQ(log[before + 2].retry_attempt, "2");
    for (size_t i = before; i < log.size(); ++i) EXPECT_EQ(log[i].custom, "mine");
  }
  EXPECT_EQ(Stats().calls, 3);
  EXPECT_EQ(Stats().retries, 6);
  // The breaker saw every attempt: 6 failures, 3 successes.
  const BreakerSnapshot b = *resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary");
  EXPECT_EQ(b.counts.failure, 6);
  EXPECT_EQ(b.counts.success, 3);
  EXPECT_EQ(Stats().attempts, 9);
}

// Stops at maxAttempts with the last attempt's status.
TEST_F(ClientInterceptorsTest, StopsAtMaxAttempts) {
  Connect(kRetry);
  service_.FailNext(5);
  grpc::Status s = Unary();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.error_message(), "scripted failure");
  EXPECT_EQ(service_.handled(), 3);
}

// Backoff delays and their jitter bounds are checked exactly on simulated
// time: call_timing_test.cc.

// Non-retryable codes, local breaker rejections, the caller's cancellation
// and the caller's deadline are never retried.
TEST_F(ClientInterceptorsTest, WhatIsNeverRetried) {
  Connect(kRetry);
  service_.FailNext(1, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(service_.handled(), 1);

  // The caller's deadline (no per-attempt timeout in this policy): the call
  // ends at it, well before the 5 s handler, and is not retried. (500 ms for
  // the attempt to reach the handler first, even on a busy machine.)
  service_.SlowNext(1, absl::Seconds(5));
  const absl::Time start = absl::Now();
  EXPECT_EQ(Unary(nullptr, absl::Milliseconds(500)).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(service_.handled(), 2);

  // The caller's cancellation, during an attempt (once it has reached the
  // handler) and during a backoff.
  service_.SlowNext(1, absl::Seconds(2));
  {
    grpc::ClientContext context;
    std::thread canceller([&] {
      EXPECT_TRUE(Eventually([&] { return service_.handled() == 3; }));
      context.TryCancel();
    });
    EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::CANCELLED);
    canceller.join();
  }
  EXPECT_EQ(service_.handled(), 3);
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "5s", "maxBackoff": "5s"}}]})");
  service_.FailNext(1);
  {
    grpc::ClientContext context;
    std::thread canceller([&] {
      // The first attempt has failed (or is about to): its backoff is 5 s.
      EXPECT_TRUE(Eventually([&] { return service_.handled() == 4; }));
      absl::SleepFor(absl::Milliseconds(50));
      context.TryCancel();
    });
    const absl::Time begin = absl::Now();
    EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_LT(absl::Now() - begin, absl::Seconds(4));  // not the 5 s backoff
    canceller.join();
  }
  EXPECT_EQ(service_.handled(), 4);

  // A local breaker rejection.
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 5}, "breaker": {"threeState": {"mode": "force_open"}}}]})");
  grpc::ClientContext context;
  EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(context.GetServerTrailingMetadata().count(kLocalRejectionKey), 1u);
  EXPECT_EQ(Stats().retries, 0);
  EXPECT_EQ(Stats().attempts, 1);
}

// Server pushback: a delay is honoured, a negative value stops retries.
TEST_F(ClientInterceptorsTest, ServerPushback) {
  Connect(kRetry);
  service_.FailNext(1, grpc::StatusCode::UNAVAILABLE, "150");
  ASSERT_TRUE(Unary().ok());
  std::vector<AttemptRecord> log = service_.Log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_GE(log[1].at - log[0].at, absl::Milliseconds(150));

  service_.FailNext(3, grpc::StatusCode::UNAVAILABLE, "-1");
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_.Log().size(), 3u);
  EXPECT_EQ(Stats().pushback_stops, 1);
}

// During an outage the retry budget runs out and retries stop: with 10
// tokens, 1 per failure and retries only above 5, at most 5 retries happen
// however many calls fail.
TEST_F(ClientInterceptorsTest, RetryBudgetStopsRetriesDuringAnOutage) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s"}}],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  service_.FailNext(1000);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_LE(Stats().retries, 5);
  EXPECT_GT(Stats().retry_budget_exhausted, 0);
  EXPECT_EQ(service_.handled(), 20 + Stats().retries);
}

// retryThrottling has gRPC's meaning (gRFC A6): one bucket for the channel,
// changed by every call on it. Unary's failures spend it; calls of a method
// without any policy (ClientStream) refill it with their successes, and
// take from it only when they carry a pushback (no code of theirs is
// retryable).
TEST_F(ClientInterceptorsTest, RetryThrottlingIsSharedByEveryMethodOfTheChannel) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService", "method": "Unary"}],
      "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.001s"}}],
      "retryThrottling": {"maxTokens": 4, "tokenRatio": 0.5}})");
  const auto tokens = [&] { return resilience_->retry_throttle()->tokens; };
  EXPECT_EQ(resilience_->retry_throttle()->max_tokens, 4);
  EXPECT_EQ(resilience_->retry_throttle()->token_ratio, 0.5);
  service_.FailNext(3);
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);  // retried: 4 -> 3 -> 2
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);  // not retried: 2 -> 1
  EXPECT_EQ(service_.handled(), 3);
  EXPECT_EQ(tokens(), 1.0);
  service_.FailNext(1);  // no policy, no pushback: costs nothing
  EXPECT_EQ(MakeCall(*stub_, CallType::kClientStream, Flavour::kSync).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(tokens(), 1.0);
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(MakeCall(*stub_, CallType::kClientStream, Flavour::kSync).status.ok());
  }
  EXPECT_EQ(tokens(), 4.0);  // 1 + 6 x 0.5, at most 4
  service_.FailNext(1);
  EXPECT_TRUE(Unary().ok());  // retried again: 4 -> 3, then + 0.5
  EXPECT_EQ(tokens(), 3.5);
  EXPECT_EQ(Stats().retries, 2);
  EXPECT_EQ(Stats().retry_budget_exhausted, 1);
}

// A retryBudget with a ttl over a real channel, on the channel's clock: a
// new channel retries its initialTokens' worth of failures, then only what
// its own calls funded (tokenRatio each, whatever their outcome), and the
// funds expire after the ttl.
TEST_F(ClientInterceptorsTest, WindowedRetryBudgetIsFundedByTheMethodsOwnCalls) {
  SimulatedClock clock;
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.001s"},
      "retryBudget": {"tokenRatio": 0.25, "ttl": "10s", "initialTokens": 1}}]})",
          clock);
  service_.FailNext(1000);
  // 1 initial token + 0.25 per call: the first failing call is retried
  // (1.25), the next two are not (0.5, 0.75), the fourth is (1.0), the fifth
  // not (0.25).
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Stats().retries, 2);
  EXPECT_EQ(Stats().retry_budget_exhausted, 3);
  EXPECT_EQ(service_.handled(), 5 + 2);
  // After the ttl the deposits and withdrawals have expired alike: the next
  // three failing calls fund 0.75, not a retry; the fourth's pays for one.
  clock.AdvanceTime(absl::Seconds(10));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Stats().retries, 2);
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Stats().retries, 3);
}

}  // namespace
}  // namespace resilience::testing
