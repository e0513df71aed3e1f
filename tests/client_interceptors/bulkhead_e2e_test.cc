// The client's bulkhead over a real channel to an in-process server: calls
// reach the server at most maxConcurrency at a time, the others wait in the
// queue without a thread of their own (callback callers) and go in order;
// a full queue, a wait that ends, and a cancellation while waiting end the
// call locally; streams take no slot; a client `throttle` is a warning.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "grpc_resilience/local_rejection.h"
#include "grpc_resilience/prometheus_text.h"
#include "gtest/gtest.h"
#include "src/client_interceptors/resilient_channel.h"
#include "src/core/mutex.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "tests/testing/chain_channel.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";

// Unary handlers wait at a gate the test opens; they count how many run at
// once.
class GatedService final : public resilience::test::TestService::Service {
 public:
  grpc::Status Unary(grpc::ServerContext* context, const resilience::test::Req* request,
                     resilience::test::Resp* response) override {
    const int now = in_flight_.fetch_add(1) + 1;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    {
      MutexLock lock(&mu_);
      order_.push_back(request->text());
      // Bounded: a call the client gave up on does not hold the server.
      for (int i = 0; i < 600 && !open_ && !context->IsCancelled(); ++i) {
        cv_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
      }
    }
    in_flight_.fetch_sub(1);
    handled_.fetch_add(1);
    response->set_text("echo:" + request->text());
    return grpc::Status::OK;
  }
  grpc::Status ServerStream(grpc::ServerContext* /*context*/,
                            const resilience::test::Req* request,
                            grpc::ServerWriter<resilience::test::Resp>* writer) override {
    resilience::test::Resp response;
    response.set_text(request->text());
    writer->Write(response);
    return grpc::Status::OK;
  }

  void Open() {
    MutexLock lock(&mu_);
    open_ = true;
    cv_.SignalAll();
  }
  // Waits (bounded) until `n` handlers are running.
  bool AwaitInFlight(int n) {
    for (int i = 0; i < 1000 && in_flight_.load() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return in_flight_.load() >= n;
  }
  std::vector<std::string> order() {
    MutexLock lock(&mu_);
    return order_;
  }

  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  std::atomic<int> handled_{0};

 private:
  Mutex mu_;
  CondVar cv_;
  bool open_ = false;
  std::vector<std::string> order_;
};

// `retried`: the method retries, so its calls are RetriedUnaryCalls;
// otherwise SingleAttemptCalls.
std::string Policy(bool retried, const std::string& bulkhead) {
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],)",
                      retried ? R"("retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s",
                                   "maxBackoff": "0.01s", "backoffMultiplier": 1,
                                   "retryableStatusCodes": ["UNAVAILABLE"]},)"
                              : "",
                      R"("bulkhead": )", bulkhead, "}]}");
}

class BulkheadE2eTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    TestServer::Options options;
    options.services.push_back(&service_);
    server_ = TestServer::Start(std::move(options));
    ASSERT_NE(server_, nullptr);
  }

  void Connect(const std::string& bulkhead) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(Policy(GetParam(), bulkhead));
    ASSERT_TRUE(policies.ok()) << policies.status();
    ClientResilience::Options options;
    options.name = "bulkhead-channel";
    ResilientChannel made = NewChainChannel(*server_, *std::move(policies), options);
    resilience_ = std::move(made.resilience);
    stub_ = resilience::test::TestService::NewStub(made.channel);
  }

  // A callback call of Unary with `text`; `done` is notified at its end.
  struct Call {
    grpc::ClientContext context;
    resilience::test::Req request;
    resilience::test::Resp response;
    grpc::Status status;
    absl::Notification done;
  };
  void Start(Call& call, const std::string& text, absl::Duration deadline = absl::Seconds(30)) {
    call.request.set_text(text);
    call.context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    stub_->async()->Unary(&call.context, &call.request, &call.response,
                          [&call](grpc::Status status) {
                            call.status = std::move(status);
                            call.done.Notify();
                          });
  }
  // Waits (bounded) until `n` calls wait for a slot.
  bool AwaitWaits(int64_t n) {
    for (int i = 0; i < 1000 && resilience_->Stats(kUnary).bulkhead_waits < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return resilience_->Stats(kUnary).bulkhead_waits >= n;
  }

  GatedService service_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<ClientResilience> resilience_;
  std::unique_ptr<resilience::test::TestService::Stub> stub_;
};

// 30 concurrent callback calls under maxConcurrency 2: two reach the server,
// 28 wait without blocking a thread, and all succeed once it answers, at
// most two at a time, in the order they came.
TEST_P(BulkheadE2eTest, ThirtyCallbackCallsReachTheServerTwoAtATime) {
  Connect(R"({"maxConcurrency": 2, "maxQueue": 30, "maxWait": "20s"})");
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < 30; ++i) {
    calls.push_back(std::make_unique<Call>());
    Start(*calls.back(), absl::StrCat(i));
  }
  ASSERT_TRUE(service_.AwaitInFlight(2));
  ASSERT_TRUE(AwaitWaits(28));
  EXPECT_EQ(service_.in_flight_.load(), 2);
  service_.Open();
  for (auto& call : calls) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_TRUE(call->status.ok()) << call->status.error_message();
  }
  EXPECT_EQ(service_.max_in_flight_.load(), 2);
  EXPECT_EQ(service_.handled_.load(), 30);
  const ClientMethodStats stats = resilience_->Stats(kUnary);
  EXPECT_EQ(stats.calls, 30);
  EXPECT_EQ(stats.bulkhead_waits, 28);
  EXPECT_EQ(stats.rejected_by_bulkhead, 0);
}

// One slot: the waiting calls reach the server in the order they queued.
TEST_P(BulkheadE2eTest, WaitingCallsGoInOrder) {
  Connect(R"({"maxConcurrency": 1, "maxQueue": 10, "maxWait": "20s"})");
  std::vector<std::unique_ptr<Call>> calls;
  std::vector<std::string> expected;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::make_unique<Call>());
    Start(*calls.back(), absl::StrCat(i));
    expected.push_back(absl::StrCat(i));
    if (i == 0) {
      ASSERT_TRUE(service_.AwaitInFlight(1));
    }
  }
  ASSERT_TRUE(AwaitWaits(7));
  service_.Open();
  for (auto& call : calls) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_TRUE(call->status.ok()) << call->status.error_message();
  }
  EXPECT_EQ(service_.order(), expected);
  EXPECT_EQ(service_.max_in_flight_.load(), 1);
}

// The same with 30 threads of blocking (sync stub) callers.
TEST_P(BulkheadE2eTest, ThirtyBlockingCallsReachTheServerTwoAtATime) {
  Connect(R"({"maxConcurrency": 2, "maxQueue": 30, "maxWait": "20s"})");
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 30; ++i) {
    threads.emplace_back([&, i] {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      resilience::test::Req request;
      request.set_text(absl::StrCat(i));
      resilience::test::Resp response;
      if (stub_->Unary(&context, request, &response).ok()) ok.fetch_add(1);
    });
  }
  ASSERT_TRUE(service_.AwaitInFlight(2));
  ASSERT_TRUE(AwaitWaits(28));
  service_.Open();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 30);
  EXPECT_EQ(service_.max_in_flight_.load(), 2);
  EXPECT_EQ(resilience_->Stats(kUnary).bulkhead_waits, 28);
}

// A full queue rejects at once, locally: UNAVAILABLE, the local-rejection
// trailer, counted, and the server never sees the call.
TEST_P(BulkheadE2eTest, FullQueueIsALocalRejection) {
  Connect(R"({"maxConcurrency": 1, "maxQueue": 1, "maxWait": "20s"})");
  Call held, queued, rejected;
  Start(held, "held");
  ASSERT_TRUE(service_.AwaitInFlight(1));
  Start(queued, "queued");
  ASSERT_TRUE(AwaitWaits(1));
  Start(rejected, "rejected");
  ASSERT_TRUE(rejected.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(rejected.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(rejected.status.error_message(),
            absl::StrCat(kUnary, ": rejected locally by the bulkhead (maxConcurrency 1 in use "
                                 "and the queue of 1 full)"));
  EXPECT_TRUE(RejectedLocally(rejected.context));
  EXPECT_FALSE(queued.done.HasBeenNotified());
  service_.Open();
  ASSERT_TRUE(held.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(queued.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(held.status.ok());
  EXPECT_TRUE(queued.status.ok());
  EXPECT_FALSE(RejectedLocally(queued.context));
  EXPECT_EQ(service_.handled_.load(), 2);
  const ClientMethodStats stats = resilience_->Stats(kUnary);
  EXPECT_EQ(stats.rejected_by_bulkhead, 1);
  EXPECT_EQ(stats.calls, 3);
  PrometheusText text;
  resilience_->AppendMetrics(text);
  EXPECT_TRUE(text.status().ok()) << text.status();
  EXPECT_THAT(text.Finish(),
              HasSubstr("grpc_resilience_client_local_rejections_total{grpc_method=\"/resilience."
                        "test.TestService/Unary\",channel=\"bulkhead-channel\",cause=\"bulkhead\"} "
                        "1\n"));
}

// A wait ends at maxWait, or at the call's deadline when that is sooner:
// a local rejection saying which, and the call never reaches the server.
TEST_P(BulkheadE2eTest, WaitEndsAtMaxWaitOrTheDeadline) {
  Connect(R"({"maxConcurrency": 1, "maxQueue": 5, "maxWait": "0.2s"})");
  Call held, by_max_wait, by_deadline;
  Start(held, "held");
  ASSERT_TRUE(service_.AwaitInFlight(1));
  Start(by_max_wait, "a");
  Start(by_deadline, "b", absl::Milliseconds(100));
  ASSERT_TRUE(by_deadline.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(by_max_wait.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(by_max_wait.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(by_max_wait.status.error_message(),
              HasSubstr("rejected locally by the bulkhead (no slot within 200ms (maxWait))"));
  EXPECT_TRUE(RejectedLocally(by_max_wait.context));
  EXPECT_EQ(by_deadline.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(by_deadline.status.error_message(),
              HasSubstr("rejected locally by the bulkhead (no slot before the call's deadline"));
  EXPECT_TRUE(RejectedLocally(by_deadline.context));
  EXPECT_EQ(resilience_->Stats(kUnary).rejected_by_bulkhead, 2);
  service_.Open();
  ASSERT_TRUE(held.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(held.status.ok());
  EXPECT_EQ(service_.handled_.load(), 1);
}

// A call cancelled while it waits ends CANCELLED at once, not rejected, and
// leaves the queue: the next call gets the slot.
TEST_P(BulkheadE2eTest, CancelWhileWaitingEndsTheCall) {
  Connect(R"({"maxConcurrency": 1, "maxQueue": 5, "maxWait": "20s"})");
  Call held, cancelled, next;
  Start(held, "held");
  ASSERT_TRUE(service_.AwaitInFlight(1));
  Start(cancelled, "cancelled");
  Start(next, "next");
  ASSERT_TRUE(AwaitWaits(2));
  cancelled.context.TryCancel();
  ASSERT_TRUE(cancelled.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(cancelled.status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_FALSE(RejectedLocally(cancelled.context));
  service_.Open();
  ASSERT_TRUE(next.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(next.status.ok());
  ASSERT_TRUE(held.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(service_.order(), (std::vector<std::string>{"held", "next"}));
  EXPECT_EQ(resilience_->Stats(kUnary).rejected_by_bulkhead, 0);
}

// Streams take no slot: a server-streaming call goes while the one slot is
// held.
TEST_P(BulkheadE2eTest, StreamsAreNotLimited) {
  Connect(R"({"maxConcurrency": 1, "maxQueue": 0})");
  Call held;
  Start(held, "held");
  ASSERT_TRUE(service_.AwaitInFlight(1));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  resilience::test::Req request;
  request.set_text("s");
  auto reader = stub_->ServerStream(&context, request);
  resilience::test::Resp response;
  EXPECT_TRUE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
  service_.Open();
  ASSERT_TRUE(held.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

INSTANTIATE_TEST_SUITE_P(CallObjects, BulkheadE2eTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Retried" : "SingleAttempt";
                         });

// One file serves both sides: an entry with the server's `throttle` and the
// client's `bulkhead` loads without a warning on the client (the shipped
// policies.json is loaded with --strict_policies by both programs).
TEST(BulkheadWarningTest, OneFileServesBothSides) {
  absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
                            "throttle": {"maxConcurrency": 2},
                            "bulkhead": {"maxConcurrency": 4}}]})");
  ASSERT_TRUE(policies.ok()) << policies.status();
  EXPECT_THAT(policies->warnings(), IsEmpty());
  grpc::ChannelArguments args;
  EXPECT_THAT(ConfigureBuiltInRetries(*policies, args), IsEmpty());
}

}  // namespace
}  // namespace resilience::testing
