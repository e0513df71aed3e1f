// The server's events reach the application's ResilienceEvents off the
// call's thread, in order: a listener that blocks holds no call, and one
// that calls back into the library does not deadlock. Over real channels to
// an in-process server, sync and callback APIs.

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "src/server_interceptors/server_interceptors.h"
#include "tests/server_interceptors/server_interceptors_fixture.h"
#include "tests/testing/eventually.h"

namespace resilience {
namespace {

using ::resilience::testing::Eventually;
using ::resilience::testing::kGet;
using ::resilience::testing::kLong;
using ::resilience::testing::ServerInterceptorsTest;

constexpr char kGetLimit1[] = R"({"methodConfig": [
  {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
   "throttle": {"maxConcurrency": 1}}]})";

// Blocks in every event until released, for a second at most.
class BlockingEvents final : public ResilienceEvents {
 public:
  void OnThrottleSaturation(const ThrottleEvent&) override {
    entered_.fetch_add(1);
    release_.WaitForNotificationWithTimeout(absl::Seconds(1));
    returned_.fetch_add(1);
  }
  absl::Notification release_;
  std::atomic<int> entered_{0};
  std::atomic<int> returned_{0};
};

// A listener that blocks holds neither the call that caused its event nor
// any other: while it blocks, rejected and admitted calls are answered.
TEST_P(ServerInterceptorsTest, BlockingListenerHoldsNoCall) {
  auto events = std::make_shared<BlockingEvents>();
  Start(kGetLimit1, Clock::Real(), events);
  PendingCall* running = StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  // The first rejection saturates the scope: its event blocks the listener.
  EXPECT_EQ(Get("fast").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(Eventually([&] { return events->entered_.load() == 1; }));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Get("fast").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << i;
    EXPECT_TRUE(Store().ok()) << i;
  }
  // Still blocked: none of those calls waited for it.
  EXPECT_EQ(events->returned_.load(), 0);
  EXPECT_EQ(state_->Stats(kGet).rejected_concurrency, 11);
  events->release_.Notify();
  gate_.Open();
  ASSERT_TRUE(running->done.WaitForNotificationWithTimeout(kLong));
  state_->FlushEvents();
  EXPECT_EQ(events->returned_.load(), 1);
}

// Calls back into the library from the event: Stats() and AllStats().
class ReentrantEvents final : public ResilienceEvents {
 public:
  explicit ReentrantEvents(std::shared_ptr<ServerResilience>* resilience)
      : resilience_(resilience) {}
  void OnThrottleSaturation(const ThrottleEvent& event) override {
    ServerResilience& resilience = **resilience_;
    rejected_seen_.store(resilience.Stats(event.method).rejected_concurrency);
    methods_seen_.store(static_cast<int>(resilience.AllStats().size()));
    delivered_.fetch_add(1);
  }
  std::shared_ptr<ServerResilience>* const resilience_;
  std::atomic<int64_t> rejected_seen_{-1};
  std::atomic<int> methods_seen_{-1};
  std::atomic<int> delivered_{0};
};

TEST_P(ServerInterceptorsTest, ListenerMayCallBackIntoTheLibrary) {
  auto events = std::make_shared<ReentrantEvents>(&state_);
  Start(kGetLimit1, Clock::Real(), events);
  PendingCall* running = StartGet("gated");
  ASSERT_TRUE(Eventually([&] { return counters_.get_waiting.load() == 1; }));
  EXPECT_EQ(Get("fast").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  state_->FlushEvents();
  EXPECT_EQ(events->delivered_.load(), 1);
  EXPECT_EQ(events->rejected_seen_.load(), 1);
  EXPECT_GE(events->methods_seen_.load(), 1);
  gate_.Open();
  ASSERT_TRUE(running->done.WaitForNotificationWithTimeout(kLong));
}

// Instantiated (sync and callback APIs) in server_interceptors_test.cc.

}  // namespace
}  // namespace resilience
