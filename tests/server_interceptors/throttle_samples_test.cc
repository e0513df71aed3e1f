// What the server throttle teaches an adaptive limit about calls that were
// not answered in time, over real channels to an in-process server (sync and
// callback APIs): a call its client cancelled is no latency sample, nor is
// one whose deadline passed after running a shorter time than the baseline
// (its latency is only known to be at least that long); an answered call is.
//
// The probe: the gradient limit starts pinned at minLimit (2) to measure its
// baseline, and comes back to its initial limit (20) once baselineSamples (2)
// latency samples are in, or once 5 x baselineSamples calls under the pin
// went unanswered (the measurement given up). A Get of key "wait" runs until its call is
// cancelled (by its client, or by gRPC at its deadline) and then ends, as a
// handler that watches for cancellation does; the throttle's clock is
// simulated and moved 3 ms while such calls run, so a call that counted
// would be a 3 ms sample.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cache/v1/cache.grpc.pb.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/testing/eventually.h"
#include "tests/testing/guarded_server.h"
#include "tests/testing/test_server.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::GuardedServer;
using ::resilience::testing::StartGuardedServer;
using ::resilience::testing::TestServer;

constexpr char kGet[] = "/cache.v1.CacheService/Get";
constexpr char kPolicy[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"adaptive": {"minLimit": 2, "baselineSamples": 2, "minSamples": 2}}}]})";
const absl::Duration kLong = absl::Seconds(10);

// Get "wait": runs until cancelled, then answers CANCELLED (at most 10 s).
// Any other key: answered at once.
class SyncService final : public cache::v1::CacheService::Service {
 public:
  std::atomic<int> waiting{0};

 private:
  grpc::Status Get(grpc::ServerContext* context, const cache::v1::GetReq* request,
                   cache::v1::GetResp* response) override {
    if (request->key() != "wait") {
      response->set_value("v");
      return grpc::Status::OK;
    }
    waiting++;
    const absl::Time give_up = absl::Now() + kLong;
    while (!context->IsCancelled() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
    return grpc::Status::CANCELLED;
  }
};

class CallbackService final : public cache::v1::CacheService::CallbackService {
 public:
  std::atomic<int> waiting{0};

 private:
  // Finishes when the call is cancelled.
  class WaitReactor final : public grpc::ServerUnaryReactor {
    void OnCancel() override { Finish(grpc::Status::CANCELLED); }
    void OnDone() override { delete this; }
  };

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                                const cache::v1::GetReq* request,
                                cache::v1::GetResp* response) override {
    if (request->key() == "wait") {
      waiting++;
      return new WaitReactor();
    }
    response->set_value("v");
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

class ThrottleSamplesTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(kPolicy);
    ASSERT_TRUE(policies.ok()) << policies.status();
    grpc::Service* service = GetParam() ? static_cast<grpc::Service*>(&callback_service_)
                                        : static_cast<grpc::Service*>(&sync_service_);
    ServerResilienceOptions options;
    GuardedServer started = StartGuardedServer<cache::v1::CacheService>(
        *std::move(policies), service, std::move(options), clock_);
    resilience_ = started.resilience;
    server_ = std::move(started.server);
    ASSERT_NE(server_, nullptr);
    stub_ = cache::v1::CacheService::NewStub(server_->NewChannel());
  }

  void TearDown() override {
    for (auto& call : calls_) EXPECT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(5));
  }

  struct Call {
    grpc::ClientContext context;
    cache::v1::GetReq request;
    cache::v1::GetResp response;
    grpc::Status status;
    absl::Notification done;
  };

  int waiting() const {
    return GetParam() ? callback_service_.waiting.load() : sync_service_.waiting.load();
  }

  // Two Gets of `key` with `deadline`; for "wait", once both handlers run,
  // the throttle's clock moves 3 ms. With `handlers_ran` (for "wait"), a
  // call that ends before its handler starts (a short deadline on a busy
  // machine) sets it false instead of failing the test.
  std::vector<Call*> StartTwoGets(const std::string& key, absl::Duration deadline,
                                  bool* handlers_ran = nullptr) {
    const int waiting_before = waiting();
    std::vector<Call*> started;
    for (int i = 0; i < 2; ++i) {
      calls_.push_back(std::make_unique<Call>());
      Call* call = calls_.back().get();
      call->request.set_key(key);
      call->context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
      stub_->async()->Get(&call->context, &call->request, &call->response,
                          [call](grpc::Status s) {
                            call->status = std::move(s);
                            call->done.Notify();
                          });
      started.push_back(call);
    }
    if (key == "wait") {
      if (handlers_ran == nullptr) {
        EXPECT_TRUE(Eventually([&] { return waiting() == waiting_before + 2; }));
      } else {
        EXPECT_TRUE(Eventually([&] {
          return waiting() == waiting_before + 2 ||
                 started[0]->done.HasBeenNotified() || started[1]->done.HasBeenNotified();
        }));
        *handlers_ran = waiting() == waiting_before + 2;
      }
      clock_.AdvanceTime(absl::Milliseconds(3));
    }
    return started;
  }

  // Waits until no Get holds a slot and returns the limit.
  int64_t LimitOnceReleased() {
    EXPECT_TRUE(Eventually([&] { return resilience_->Stats(kGet).in_flight == 0; }));
    return resilience_->Stats(kGet).concurrency_limit;
  }

  SimulatedClock clock_;
  SyncService sync_service_;
  CallbackService callback_service_;
  std::shared_ptr<ServerResilience> resilience_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<cache::v1::CacheService::Stub> stub_;
  std::vector<std::unique_ptr<Call>> calls_;
};

// Answered calls are samples: two of them end the measurement.
TEST_P(ThrottleSamplesTest, AnsweredCallsAreSamples) {
  for (Call* call : StartTwoGets("k", kLong)) {
    ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    EXPECT_TRUE(call->status.ok()) << call->status.error_message();
  }
  EXPECT_TRUE(Eventually([&] { return resilience_->Stats(kGet).concurrency_limit == 20; }));
}

// Calls cancelled by their client after 3 ms are no samples: the limit stays
// pinned, still measuring. (Before, they were 3 ms samples, and ended the
// measurement with a 3 ms baseline.)
TEST_P(ThrottleSamplesTest, CancelledCallsAreNoSamples) {
  for (Call* call : StartTwoGets("wait", kLong)) call->context.TryCancel();
  for (auto& call : calls_) ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
  EXPECT_EQ(LimitOnceReleased(), 2);
  EXPECT_EQ(resilience_->Stats(kGet).admitted, 2);
}

// But a measurement that only ever sees cancelled calls gives up once
// 5 x baselineSamples (10) of them have ended: the limit comes back from its
// pin to the initial 20. (It stayed pinned for as long as no call was
// answered: after a cancellation storm on a fresh server, limit 3.)
TEST_P(ThrottleSamplesTest, CancelledCallsDoNotKeepTheLimitPinned) {
  for (int round = 0; round < 5; ++round) {
    for (Call* call : StartTwoGets("wait", kLong)) call->context.TryCancel();
    for (auto& call : calls_) ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
    if (round < 4) {
      EXPECT_EQ(LimitOnceReleased(), 2) << "round " << round;
    }
  }
  EXPECT_EQ(LimitOnceReleased(), 20);
  EXPECT_EQ(resilience_->Stats(kGet).admitted, 10);
}

// Calls whose deadline passes while they run, having run 3 ms on the
// throttle's clock (less than any baseline), are no samples either. Both
// handlers must have started before the deadline: on a busy machine a 50 ms
// deadline can pass before a call reaches its handler (the first call also
// connects), so such a round is let go (its calls expired too, no samples
// either) and tried again with twice the deadline, up to 1.6 s.
TEST_P(ThrottleSamplesTest, CallsExpiredEarlyAreNoSamples) {
  for (absl::Duration deadline = absl::Milliseconds(50);; deadline *= 2) {
    bool handlers_ran = false;
    for (Call* call : StartTwoGets("wait", deadline, &handlers_ran)) {
      ASSERT_TRUE(call->done.WaitForNotificationWithTimeout(kLong));
      EXPECT_EQ(call->status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    }
    if (handlers_ran) break;
    ASSERT_LT(deadline, absl::Milliseconds(1600)) << "no round had both handlers start";
    ASSERT_EQ(LimitOnceReleased(), 2);
  }
  // The server sees the deadline a little after the client (transit).
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(LimitOnceReleased(), 2);
}

INSTANTIATE_TEST_SUITE_P(SyncAndCallbackApis, ThrottleSamplesTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Callback" : "Sync";
                         });

}  // namespace
}  // namespace resilience
