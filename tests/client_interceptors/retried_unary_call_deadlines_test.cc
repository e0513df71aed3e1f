// RetriedUnaryCall over real channels: per-attempt timeouts and deadlines,
// the statuses of local outcomes, calls it passes through (GenericStub),
// waitForReady for every attempt, and a stress run with cancellations.

#include "src/client_interceptors/retried_unary_call.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "gmock/gmock.h"
#include "grpcpp/completion_queue.h"
#include "gtest/gtest.h"
#include "src/client_interceptors/local_rejection.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;

// Retry up to 3 attempts on UNAVAILABLE, 20 ms then 40 ms (+-20%), with a
// retry budget large enough not to interfere (it has a test of its own).
constexpr char kRetry[] = R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "1s",
                    "backoffMultiplier": 2, "jitter": 0.2,
                    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
    "breaker": {"sre": {}}}],
    "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})";

// A slow attempt times out on its own timeout and the next one succeeds;
// the breaker records the timeout as a failure.
TEST_F(ClientInterceptorsTest, PerAttemptTimeoutThenSuccess) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "perAttemptTimeout": "0.1s",
                      "retryableStatusCodes": ["DEADLINE_EXCEEDED"]},
      "breaker": {"sre": {}}}]})");
  // The first attempt's window must not be spent connecting.
  ASSERT_TRUE(channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))));
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
  // The first attempt's window must not be spent connecting.
  ASSERT_TRUE(channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))));
  service_.SlowNext(100, absl::Seconds(2));
  const absl::Time start = absl::Now();
  const grpc::Status status = Unary(nullptr, absl::Milliseconds(300));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // 300 ms hold two attempts of 100 ms and their backoffs (10 ms, then
  // 19 ms with this seed), and a third started at about 230 ms; a loaded
  // machine may get only two started. (At 250 ms, 20 ms of lateness left no
  // room for the third: the call was "not retried", a retry could not start
  // before the deadline.)
  EXPECT_THAT(status.error_message(),
              ::testing::MatchesRegex("/resilience.test.TestService/Unary: deadline exceeded: "
                                      "the caller's deadline ran out after [23] attempts"));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(290));
  EXPECT_LT(took, absl::Milliseconds(650));
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
  // The first attempt's window must not be spent connecting.
  ASSERT_TRUE(channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10))));
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
