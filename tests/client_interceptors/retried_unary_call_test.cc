// The retry interceptor over real channels (the timeout interceptor's tests
// are in timeout_interceptor_test.cc).

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
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"

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

// Backoff delays fall within the jitter bounds: 20 ms and 40 ms, +-20%.
TEST_F(ClientInterceptorsTest, BackoffWithinJitterBounds) {
  Connect(kRetry);
  service_.FailNext(2);
  ASSERT_TRUE(Unary().ok());
  std::vector<AttemptRecord> log = service_.Log();
  ASSERT_EQ(log.size(), 3u);
  const absl::Duration first = log[1].at - log[0].at;
  const absl::Duration second = log[2].at - log[1].at;
  EXPECT_GE(first, absl::Milliseconds(16));
  // Upper bounds with slack for a loaded machine's scheduling; the exact
  // bounds are checked on a simulated clock (tests/retry/backoff_test.cc).
  EXPECT_LE(first, absl::Milliseconds(24 + 100));
  EXPECT_GE(second, absl::Milliseconds(32));
  EXPECT_LE(second, absl::Milliseconds(48 + 100));
}

// Non-retryable codes, local breaker rejections, the caller's cancellation
// and the caller's deadline are never retried.
TEST_F(ClientInterceptorsTest, WhatIsNeverRetried) {
  Connect(kRetry);
  service_.FailNext(1, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(service_.handled(), 1);

  // The caller's deadline (no per-attempt timeout in this policy).
  service_.SlowNext(1, absl::Seconds(2));
  const absl::Time start = absl::Now();
  EXPECT_EQ(Unary(nullptr, absl::Milliseconds(100)).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(service_.handled(), 2);

  // The caller's cancellation, during an attempt and during a backoff.
  service_.SlowNext(1, absl::Seconds(2));
  {
    grpc::ClientContext context;
    std::thread canceller([&] {
      absl::SleepFor(absl::Milliseconds(50));
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
      absl::SleepFor(absl::Milliseconds(100));
      context.TryCancel();
    });
    const absl::Time begin = absl::Now();
    EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_LT(absl::Now() - begin, absl::Seconds(2));  // not the 5 s backoff
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
  const RetryBudget& throttle = *resilience_->retry_throttle();
  service_.FailNext(3);
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);  // retried: 4 -> 3 -> 2
  EXPECT_EQ(Unary().error_code(), grpc::StatusCode::UNAVAILABLE);  // not retried: 2 -> 1
  EXPECT_EQ(service_.handled(), 3);
  EXPECT_EQ(throttle.tokens(), 1.0);
  service_.FailNext(1);  // no policy, no pushback: costs nothing
  EXPECT_EQ(MakeCall(*stub_, CallType::kClientStream, Flavour::kSync).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(throttle.tokens(), 1.0);
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(MakeCall(*stub_, CallType::kClientStream, Flavour::kSync).status.ok());
  }
  EXPECT_EQ(throttle.tokens(), 4.0);  // 1 + 6 x 0.5, at most 4
  service_.FailNext(1);
  EXPECT_TRUE(Unary().ok());  // retried again: 4 -> 3, then + 0.5
  EXPECT_EQ(throttle.tokens(), 3.5);
  EXPECT_EQ(Stats().retries, 2);
  EXPECT_EQ(Stats().retry_budget_exhausted, 1);
}

// A slow attempt times out on its own timeout and the next one succeeds;
// the breaker records the timeout as a failure.
TEST_F(ClientInterceptorsTest, PerAttemptTimeoutThenSuccess) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "perAttemptTimeout": "0.1s",
                      "retryableStatusCodes": ["DEADLINE_EXCEEDED"]},
      "breaker": {"sre": {}}}]})");
  service_.SlowNext(1, absl::Seconds(2));
  const absl::Time start = absl::Now();
  EXPECT_TRUE(Unary().ok());
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(100));
  EXPECT_LT(took, absl::Seconds(1));
  EXPECT_EQ(Stats().attempt_timeouts, 1);
  const BreakerSnapshot b = *resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary");
  EXPECT_EQ(b.counts.failure, 1);
  EXPECT_EQ(b.counts.success, 1);
}

// The caller's deadline wins over per-attempt timeouts: no attempt outlives
// it, and the call ends with DEADLINE_EXCEEDED at the caller's deadline.
TEST_F(ClientInterceptorsTest, OverallDeadlineWins) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 10, "initialBackoff": "0.01s", "perAttemptTimeout": "0.1s",
                      "retryableStatusCodes": ["DEADLINE_EXCEEDED"]}}]})");
  service_.SlowNext(100, absl::Seconds(2));
  const absl::Time start = absl::Now();
  const grpc::Status status = Unary(nullptr, absl::Milliseconds(250));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // 250 ms hold two attempts of 100 ms and their backoffs, and a third
  // started; a loaded machine may get only two started.
  EXPECT_THAT(status.error_message(),
              ::testing::MatchesRegex("/resilience.test.TestService/Unary: deadline exceeded: "
                                      "the caller's deadline ran out after [23] attempts"));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(240));
  EXPECT_LT(took, absl::Milliseconds(600));
  EXPECT_LE(service_.handled(), 3);
}

// A gRPC service config means here what it means in gRPC: `timeout` is the
// whole call's deadline, shared by its attempts (not one per attempt: three
// slow attempts would take 900 ms).
TEST_F(ClientInterceptorsTest, ServiceConfigTimeoutIsTheWholeCall) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "timeout": "0.3s",
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
                      "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  service_.SlowNext(3, absl::Seconds(2));
  const absl::Time start = absl::Now();
  const grpc::Status status = Unary(nullptr, absl::InfiniteDuration());
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(status.error_message(),
            "/resilience.test.TestService/Unary: deadline exceeded: the policy's timeout of "
            "300ms ran out after 1 attempt");
  EXPECT_GE(took, absl::Milliseconds(290));
  EXPECT_LT(took, absl::Milliseconds(700));
  EXPECT_EQ(service_.handled(), 1);
  // The earlier of the caller's deadline and the timeout wins.
  service_.SlowNext(1, absl::Seconds(2));
  const grpc::Status caller = Unary(nullptr, absl::Milliseconds(100));
  EXPECT_EQ(caller.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(caller.error_message(), HasSubstr("the caller's deadline ran out"));
}

// The last attempt's per-attempt timeout, and a retry budget that is spent,
// say so in the chain's one style: method, cause, last attempt.
TEST_F(ClientInterceptorsTest, LocalOutcomesNameTheMethodAndTheCause) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s", "perAttemptTimeout": "0.4s",
                      "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}}],
      "retryThrottling": {"maxTokens": 4, "tokenRatio": 0.1}})");
  // (0.4 s: the scripted failure below must come back within one attempt's
  // timeout, also on a loaded machine.)
  service_.SlowNext(2, absl::Seconds(3));
  grpc::Status status = Unary();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(status.error_message(),
            "/resilience.test.TestService/Unary: attempt 2 of 2 exceeded its per-attempt "
            "timeout of 400ms");
  // Two failures took the budget from 4 tokens to 2: retries need more than
  // half of maxTokens, so the next failure is not retried.
  service_.FailNext(1);
  status = Unary();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(),
            "/resilience.test.TestService/Unary: not retried after 1 attempt: the channel's "
            "retryThrottling is spent (at most maxTokens / 2 tokens left); last attempt: "
            "UNAVAILABLE: scripted failure");
}

// Local facts come from local state: a server that sends the breaker's
// local-rejection trailer with UNAVAILABLE is retried like any UNAVAILABLE,
// and RejectedLocally() says false.
TEST_F(ClientInterceptorsTest, ServerCannotImpersonateALocalRejection) {
  Connect(kRetry);
  service_.SetFailureTrailer(kLocalRejectionKey, "breaker");
  service_.FailNext(3);
  grpc::ClientContext context;
  EXPECT_EQ(Unary(&context).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(service_.handled(), 3);
  EXPECT_FALSE(RejectedLocally(context));
  // Without retries the trailer reaches the caller, still not a local fact.
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "breaker": {"sre": {}}}]})");
  service_.FailNext(1);
  grpc::ClientContext plain;
  EXPECT_EQ(Unary(&plain).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(RejectedLocally(plain));
  // A real rejection still says true.
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s"},
      "breaker": {"threeState": {"mode": "force_open"}}}]})");
  grpc::ClientContext rejected;
  EXPECT_EQ(Unary(&rejected).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(RejectedLocally(rejected));
}

// A GenericStub call on a retried method must not be parsed as a protobuf
// message (it receives into a ByteBuffer): it is passed through untouched,
// with its breaker, and counted; generated stubs keep their retries.
TEST_F(ClientInterceptorsTest, GenericStubCallsArePassedThrough) {
  Connect(kRetry);
  grpc::GenericStub generic(channel_);
  resilience::test::Req request;
  request.set_text("hi");
  for (bool fail : {false, true}) {
    SCOPED_TRACE(fail ? "failing" : "succeeding");
    const int before = service_.handled();
    if (fail) service_.FailNext(3);
    grpc::ByteBuffer send;
    bool own_buffer = false;
    ASSERT_TRUE(
        grpc::SerializationTraits<resilience::test::Req>::Serialize(request, &send, &own_buffer)
            .ok());
    grpc::ByteBuffer reply;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    grpc::CompletionQueue cq;
    grpc::Status status;
    auto call = generic.PrepareUnaryCall(&context, "/resilience.test.TestService/Unary", send,
                                         &cq);
    call->StartCall();
    call->Finish(&reply, &status, reinterpret_cast<void*>(1));
    internal_calls::Await(cq, 1);
    cq.Shutdown();
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {
    }
    EXPECT_EQ(status.error_code(), fail ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::OK);
    EXPECT_EQ(service_.handled() - before, 1);
    if (!fail) {
      resilience::test::Resp response;
      ASSERT_TRUE(
          grpc::SerializationTraits<resilience::test::Resp>::Deserialize(&reply, &response).ok());
      EXPECT_EQ(response.text(), "echo:hi");
    }
  }
  EXPECT_EQ(Stats().not_retried_stub_calls, 2);
  EXPECT_EQ(resilience_->BreakerSnapshotOf("/resilience.test.TestService/Unary")->counts.failure,
            1);
  service_.FailNext(2);
  EXPECT_TRUE(Unary().ok());  // the generated stub is still retried
}

// waitForReady from the policy applies to every attempt: a retried call to
// a port where nothing listens waits out its deadline instead of failing
// UNAVAILABLE at once.
TEST_F(ClientInterceptorsTest, WaitForReadyAppliesToEveryAttempt) {
  const std::string target = absl::StrCat("localhost:", server_->port());
  server_.reset();  // nothing listens there any more
  for (bool wait : {false, true}) {
    SCOPED_TRACE(wait ? "waitForReady" : "fail fast");
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(absl::StrCat(
        R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
            "waitForReady": )", wait ? "true" : "false", R"(,
            "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s"}}]})"));
    ASSERT_TRUE(policies.ok()) << policies.status();
    auto state = std::make_shared<ClientResilience>(*policies, ClientResilience::Options{});
    auto channel = grpc::experimental::CreateCustomChannelWithInterceptors(
        target, grpc::InsecureChannelCredentials(), grpc::ChannelArguments(),
        ::resilience::ClientInterceptorFactories(state));
    auto stub = resilience::test::TestService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(500)));
    resilience::test::Req request;
    resilience::test::Resp response;
    const absl::Time start = absl::Now();
    const grpc::Status status = stub->Unary(&context, request, &response);
    const absl::Duration took = absl::Now() - start;
    if (wait) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
      EXPECT_GE(took, absl::Milliseconds(450));
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
      EXPECT_LT(took, absl::Milliseconds(450));
    }
    EXPECT_LT(took, absl::Seconds(3));
  }
}

// Many concurrent calls with random cancellations and deadlines, through
// retries, timeouts and the breaker: every call ends, none hangs.
TEST_F(ClientInterceptorsTest, StressWithCancellationsAndDeadlines) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "timeout": "0.05s",
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s",
                      "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
      "breaker": {"sre": {}}}]})");
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        if (i % 10 == 0) service_.FailNext(2);
        if (i % 15 == 0) service_.SlowNext(1, absl::Milliseconds(80));
        grpc::ClientContext context;
        context.set_deadline(
            absl::ToChronoTime(absl::Now() + absl::Milliseconds(i % 7 == 0 ? 5 : 500)));
        std::thread canceller;
        if ((i + t) % 9 == 0) {
          canceller = std::thread([&context, i] {
            absl::SleepFor(absl::Microseconds(100 * (i % 5)));
            context.TryCancel();
          });
        }
        resilience::test::Req request;
        resilience::test::Resp response;
        (void)stub_->Unary(&context, request, &response);
        if (canceller.joinable()) canceller.join();
        finished++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(finished.load(), 600);
}

}  // namespace
}  // namespace resilience::testing
