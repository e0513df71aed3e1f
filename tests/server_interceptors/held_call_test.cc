// Callers that cancel calls held in an injected delay, in front of a
// concurrency limit of 3, over real channels to an in-process guarded server
// (sync and callback APIs). On the sync API the guard holds the call on its
// handler thread and sees the cancellation: the three slots are free within
// moments and a new call is admitted. On the callback API gRPC 1.51 reports
// no cancellation before the user's handler runs, and no placement of the
// hold can change that (docs/server-rejection.md, fact 9): the slots stay
// taken until the delay or the callers' deadlines end. This pins that fact;
// if it ever fails on the callback API, gRPC now reports the cancellation
// and the hold should use it.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"
#include "tests/testing/test_server.h"

namespace resilience {
namespace {

using ::resilience::test::Req;
using ::resilience::test::Resp;
using ::resilience::test::TestService;
using ::resilience::testing::Eventually;
using ::resilience::testing::GuardedServer;
using ::resilience::testing::StartGuardedServer;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/resilience.test.TestService/Unary";
constexpr int kLimit = 3;

// One Unary call in flight from the client's side.
struct PendingCall {
  grpc::ClientContext context;
  Req request;
  Resp response;
  grpc::Status status;
  absl::Notification done;
};

class HeldCallTest : public ::testing::TestWithParam<bool> {
 protected:
  bool callback_api() const { return GetParam(); }

  void SetUp() override {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(absl::StrCat(
        R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
            "throttle": {"maxConcurrency": )",
        kLimit, R"(}, "faultInjection": {"delay": "20s"}}]})"));
    ASSERT_TRUE(policies.ok()) << policies.status();
    service_ = std::make_unique<testing::EchoService>(callback_api(), &runs_);
    GuardedServer started = StartGuardedServer<TestService>(*std::move(policies), service_->get(),
                                                            ServerResilienceOptions());
    resilience_ = started.resilience;
    server_ = std::move(started.server);
    ASSERT_NE(server_, nullptr);
    stub_ = TestService::NewStub(server_->NewChannel());
  }

  void TearDown() override {
    // The callback API's holds outlast the test otherwise.
    if (resilience_ != nullptr) resilience_->EndHoldsAt(absl::Now());
    for (auto& call : calls_) {
      call->context.TryCancel();
      EXPECT_TRUE(call->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    }
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(5));
  }

  // A Unary call with a 30 s deadline (longer than nothing here).
  PendingCall* Start() {
    calls_.push_back(std::make_unique<PendingCall>());
    PendingCall* call = calls_.back().get();
    call->context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    stub_->async()->Unary(&call->context, &call->request, &call->response,
                          [call](grpc::Status s) {
                            call->status = std::move(s);
                            call->done.Notify();
                          });
    return call;
  }

  ServerMethodStats Stats() const { return resilience_->Stats(kUnary); }

  testing::HandlerRuns runs_;
  std::unique_ptr<testing::EchoService> service_;
  std::shared_ptr<ServerResilience> resilience_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<TestService::Stub> stub_;
  std::vector<std::unique_ptr<PendingCall>> calls_;
};

// Three callers take the three slots, their calls held for 20 s, and
// cancel; then a fourth call. Sync API: the slots are free within 2 s
// (5 ms polls, generous for a loaded machine) and the fourth call is
// admitted, no handler ran. Callback API: the slots are still taken 300 ms
// after the cancellations reached the clients, and the fourth call is
// refused by the limit.
TEST_P(HeldCallTest, CallersThatCancelDuringADelay) {
  std::vector<PendingCall*> held;
  for (int i = 0; i < kLimit; ++i) held.push_back(Start());
  ASSERT_TRUE(Eventually([&] { return Stats().faults_delayed == kLimit; }));
  ASSERT_EQ(Stats().in_flight, kLimit);
  for (PendingCall* call : held) call->context.TryCancel();
  for (PendingCall* call : held) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(absl::Seconds(5)));
    EXPECT_EQ(call->status.error_code(), grpc::StatusCode::CANCELLED);
  }
  if (!callback_api()) {
    const absl::Time cancelled = absl::Now();
    ASSERT_TRUE(Eventually([&] { return Stats().in_flight == 0; }));
    EXPECT_LT(absl::Now() - cancelled, absl::Seconds(2));
    Start();
    EXPECT_TRUE(Eventually([&] { return Stats().faults_delayed == kLimit + 1; }));
    EXPECT_EQ(Stats().rejected_concurrency, 0);
    EXPECT_EQ(Stats().expired_while_delayed, kLimit);
  } else {
    absl::SleepFor(absl::Milliseconds(300));  // what a cancellation would need
    EXPECT_EQ(Stats().in_flight, kLimit);
    PendingCall* fourth = Start();
    ASSERT_TRUE(fourth->done.WaitForNotificationWithTimeout(absl::Seconds(5)));
    EXPECT_EQ(fourth->status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(fourth->status.error_message(), HasSubstr("concurrency limit 3 reached"));
  }
  EXPECT_EQ(runs_.total(), 0);
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, HeldCallTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace resilience
