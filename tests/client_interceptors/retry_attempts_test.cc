// How the retry interceptor makes its attempts: on the caller's thread for
// blocking stubs, without any call when the breaker rejects, each attempt
// seen once by the breaker and by the application's inner interceptors, and
// a cancellation that ends a backoff at once, for every stub flavour.

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "src/client_interceptors/local_rejection.h"
#include "src/client_interceptors/resilient_channel.h"
#include "src/client_interceptors/grpc_internals.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience::testing {
namespace {

using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::InterceptorBatchMethods;
using ::testing::HasSubstr;

// Records what CallerBlocks(), CallerQueue() and CallerUsesCallbacks() say
// about each call it sees.
class CallerKindProbe final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateClientInterceptor(ClientRpcInfo* /*info*/) override {
    return new Probe(this);
  }
  int blocking() const { return blocking_.load(); }
  int other() const { return other_.load(); }
  int own_queue() const { return own_queue_.load(); }
  int callbacks() const { return callbacks_.load(); }

 private:
  class Probe final : public grpc::experimental::Interceptor {
   public:
    explicit Probe(CallerKindProbe* owner) : owner_(owner) {}
    void Intercept(InterceptorBatchMethods* methods) override {
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
        (internal::CallerBlocks(methods) ? owner_->blocking_ : owner_->other_).fetch_add(1);
        if (internal::CallerQueue(methods) != nullptr) owner_->own_queue_.fetch_add(1);
        if (internal::CallerUsesCallbacks(methods)) owner_->callbacks_.fetch_add(1);
      }
      methods->Proceed();
    }

   private:
    CallerKindProbe* const owner_;
  };

  std::atomic<int> blocking_{0};
  std::atomic<int> other_{0};
  std::atomic<int> own_queue_{0};
  std::atomic<int> callbacks_{0};
};

// Only a blocking stub's call is seen as one whose thread may run the
// attempts; async and callback callers must never be blocked.
TEST_F(ClientInterceptorsTest, OnlyBlockingStubsAreRunOnTheCallersThread) {
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    auto probe = std::make_unique<CallerKindProbe>();
    CallerKindProbe* counts = probe.get();
    std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> list;
    list.push_back(std::move(probe));
    auto channel = server_->NewChannel(std::move(list), grpc::ChannelArguments());
    auto stub = resilience::test::TestService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    ASSERT_TRUE(UnaryCall(*stub, flavour, &context).ok());
    EXPECT_EQ(counts->blocking(), flavour == Flavour::kSync ? 1 : 0);
    EXPECT_EQ(counts->other(), flavour == Flavour::kSync ? 0 : 1);
    // Only an async stub's call has a queue of the application's, where its
    // attempts may complete.
    EXPECT_EQ(counts->own_queue(), flavour == Flavour::kAsync ? 1 : 0);
    // Only a callback stub's call completes where callback attempts do.
    EXPECT_EQ(counts->callbacks(), flavour == Flavour::kCallback ? 1 : 0);
  }
}

// Counts the calls whose initial metadata its interceptors see (an
// interceptor is created for every call, but one past a hijacking
// interceptor sees nothing of that call).
// `created` counts the calls created with it (the application's call and
// each attempt call).
class CallCounter final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit CallCounter(std::atomic<int>* count, std::atomic<int>* created = nullptr)
      : count_(count), created_(created) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(ClientRpcInfo* /*info*/) override {
    if (created_ != nullptr) created_->fetch_add(1);
    return new Counting(count_);
  }

 private:
  class Counting final : public grpc::experimental::Interceptor {
   public:
    explicit Counting(std::atomic<int>* count) : count_(count) {}
    void Intercept(InterceptorBatchMethods* methods) override {
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
        count_->fetch_add(1);
      }
      methods->Proceed();
    }

   private:
    std::atomic<int>* const count_;
  };

  std::atomic<int>* const count_;
  std::atomic<int>* const created_;
};

// A breaker that rejects ends the call before any attempt call exists: the
// channel never connects, the handler never runs, and the rejection is not
// retried, for every stub flavour.
TEST_F(ClientInterceptorsTest, ARejectionUnderRetryBuildsNoCall) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
      "breaker": {"threeState": {"mode": "force_open"}}}]})");
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    const grpc::Status status = UnaryCall(*stub_, flavour, &context);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(status.error_message(),
                HasSubstr("/resilience.test.TestService/Unary: rejected locally by the circuit "
                          "breaker (three_state: forced open)"));
    EXPECT_TRUE(RejectedLocally(context));
  }
  EXPECT_EQ(service_.handled(), 0);
  EXPECT_EQ(channel_->GetState(false), GRPC_CHANNEL_IDLE);
  const ClientMethodStats stats = Stats();
  EXPECT_EQ(stats.calls, 3);
  EXPECT_EQ(stats.attempts, 3);
  EXPECT_EQ(stats.rejected_by_breaker, 3);
  EXPECT_EQ(stats.retries, 0);

  // Through CreateResilientChannel: the only call ever created is the
  // application's own; the inner interceptors see nothing.
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
          "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
          "breaker": {"threeState": {"mode": "force_open"}}}]})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    std::atomic<int> saw{0};
    std::atomic<int> created{0};
    ResilientChannelOptions options;
    options.inner_interceptors.push_back(std::make_unique<CallCounter>(&saw, &created));
    ResilientChannel channel = CreateResilientChannel(
        server_->address(), grpc::InsecureChannelCredentials(), *policies, std::move(options));
    auto stub = resilience::test::TestService::NewStub(channel.channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    EXPECT_EQ(UnaryCall(*stub, flavour, &context).error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_TRUE(RejectedLocally(context));
    EXPECT_EQ(created.load(), 1);
    EXPECT_EQ(saw.load(), 0);
  }
}

// The breaker is told about every attempt exactly once: with four
// consecutive failures to open, a call whose three attempts fail leaves it
// closed, and the next failing attempt opens it, so that call's retry is
// rejected locally.
TEST_F(ClientInterceptorsTest, TheBreakerCountsEachAttemptOnce) {
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    // A new channel, with a new breaker, per flavour.
    Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
        "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.02s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
        "breaker": {"threeState": {"consecutiveFailures": 4, "failureRateThreshold": 1,
                                   "minRequests": 1000, "openDuration": "60s"}}}],
        "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})");
    service_.FailNext(3);
    grpc::ClientContext first;
    first.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    const grpc::Status failed = UnaryCall(*stub_, flavour, &first);
    EXPECT_EQ(failed.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_FALSE(RejectedLocally(first));
    EXPECT_EQ(Stats().Transitions(BreakerState::kClosed, BreakerState::kOpen), 0);

    service_.FailNext(1);
    grpc::ClientContext second;
    second.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    const grpc::Status rejected = UnaryCall(*stub_, flavour, &second);
    EXPECT_EQ(rejected.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_TRUE(RejectedLocally(second)) << rejected.error_message();
    const ClientMethodStats stats = Stats();
    EXPECT_EQ(stats.Transitions(BreakerState::kClosed, BreakerState::kOpen), 1);
    EXPECT_EQ(stats.attempts, 5);  // 3 + 1 sent + 1 rejected
    EXPECT_EQ(stats.rejected_by_breaker, 1);
  }
}

// A cancellation during a long backoff ends the call at once, whichever
// thread waits the backoff (the caller's own for a blocking stub).
TEST_F(ClientInterceptorsTest, CancellationEndsABackoffAtOnce) {
  Connect(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "30s", "maxBackoff": "30s",
                      "backoffMultiplier": 1, "jitter": 0,
                      "retryableStatusCodes": ["UNAVAILABLE"]}}],
      "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})");
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    service_.FailNext(1);
    const int handled_before = service_.handled();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    std::thread canceller([&] {
      // Once the first attempt was handled, the call is in its backoff.
      Eventually([&] { return service_.handled() != handled_before; }, absl::Seconds(5));
      absl::SleepFor(absl::Milliseconds(50));
      context.TryCancel();
    });
    const absl::Time start = absl::Now();
    const grpc::Status status = UnaryCall(*stub_, flavour, &context);
    const absl::Duration took = absl::Now() - start;
    canceller.join();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
    EXPECT_LT(took, absl::Seconds(10));
    EXPECT_EQ(service_.handled(), handled_before + 1);
  }
}

// The application's outer interceptors see the call once; its inner ones
// see each attempt our retry sends (and none our breaker rejected).
TEST_F(ClientInterceptorsTest, InnerInterceptorsSeeEveryAttempt) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
          "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.02s",
                          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
          "breaker": {"sre": {}}}],
          "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  for (Flavour flavour : kFlavours) {
    SCOPED_TRACE(Name(flavour));
    std::atomic<int> outer{0};
    std::atomic<int> inner{0};
    ResilientChannelOptions options;
    options.outer_interceptors.push_back(std::make_unique<CallCounter>(&outer));
    options.inner_interceptors.push_back(std::make_unique<CallCounter>(&inner));
    ResilientChannel channel = CreateResilientChannel(
        server_->address(), grpc::InsecureChannelCredentials(), *policies, std::move(options));
    auto stub = resilience::test::TestService::NewStub(channel.channel);
    service_.FailNext(2);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    EXPECT_TRUE(UnaryCall(*stub, flavour, &context).ok());
    EXPECT_EQ(outer.load(), 1);
    EXPECT_EQ(inner.load(), 3);
  }
}

// An async caller's attempts complete on its own queue, yet its Next()
// returns nothing but its call's tag: a call retried twice, with and without
// an inner interceptor of the application's (whose post-receive hooks bring
// the attempt's batch through the queue twice), yields exactly one event.
TEST_F(ClientInterceptorsTest, AnAsyncCallersQueueReturnsOnlyItsOwnTag) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
          "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.02s",
                          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
          "retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1}})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  for (const bool inner_interceptor : {false, true}) {
    SCOPED_TRACE(inner_interceptor ? "with an inner interceptor" : "without");
    std::atomic<int> inner{0};
    ResilientChannelOptions options;
    if (inner_interceptor) {
      options.inner_interceptors.push_back(std::make_unique<CallCounter>(&inner));
    }
    ResilientChannel channel = CreateResilientChannel(
        server_->address(), grpc::InsecureChannelCredentials(), *policies, std::move(options));
    auto stub = resilience::test::TestService::NewStub(channel.channel);
    service_.FailNext(2);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    resilience::test::Req request;
    request.set_text("hi");
    resilience::test::Resp response;
    grpc::Status status;
    grpc::CompletionQueue cq;
    auto rpc = stub->AsyncUnary(&context, request, &cq);
    int finished = 0;
    rpc->Finish(&response, &status, &finished);
    void* tag = nullptr;
    bool ok = false;
    ASSERT_EQ(cq.AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + absl::Seconds(20))),
              grpc::CompletionQueue::GOT_EVENT);
    EXPECT_EQ(tag, &finished);
    EXPECT_TRUE(ok);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.text(), "echo:hi");
    EXPECT_EQ(channel.resilience->Stats("/resilience.test.TestService/Unary").attempts, 3);
    EXPECT_EQ(inner.load(), inner_interceptor ? 3 : 0);
    cq.Shutdown();
    int more = 0;
    while (cq.Next(&tag, &ok)) ++more;
    EXPECT_EQ(more, 0);
  }
}

}  // namespace
}  // namespace resilience::testing
