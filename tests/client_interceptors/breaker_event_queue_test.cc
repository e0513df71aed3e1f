// Breaker events reach the application's listener outside every lock of the
// library and never on a thread that must not block: a listener that reads
// the library back, and one that blocks for a second, on sync, async and
// callback stubs, for retried calls (RetriedUnaryCall) and single-attempt
// calls (SingleAttemptCall).

#include "src/client_interceptors/breaker_event_queue.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "src/core/mutex.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/client_test_fixture.h"

namespace resilience::testing {
namespace {

constexpr char kUnary[] = "/resilience.test.TestService/Unary";

// Trips after 2 failures and stays open for the test; `retried`: the unary
// method retries (its calls are RetriedUnaryCalls), else it is a
// single-attempt call.
std::string Policy(bool retried) {
  return std::string(R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService",
      "method": "Unary"}],)") +
         (retried ? R"("retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s",
             "maxBackoff": "0.001s", "backoffMultiplier": 1,
             "retryableStatusCodes": ["UNAVAILABLE"]},)"
                  : "") +
         R"("breaker": {"threeState": {"consecutiveFailures": 2, "openDuration": "600s"}}}]})";
}

// Reads the library back from inside OnBreakerTransition(), then blocks
// for `block` (zero: not at all).
class ReadingListener final : public ResilienceEvents {
 public:
  explicit ReadingListener(absl::Duration block) : block_(block) {}

  void OnBreakerTransition(const BreakerEvent& event) override {
    // Would deadlock if delivered under a lock these take, or under the
    // call's own lock with a re-entrant read.
    const std::shared_ptr<ClientResilience> channel = resilience.lock();
    if (channel == nullptr) return;  // the channel is gone
    const ClientMethodStats stats = channel->Stats(event.method);
    const std::optional<BreakerSnapshot> snapshot = channel->BreakerSnapshotOf(event.method);
    {
      MutexLock lock(&mu_);
      transitions_seen_.push_back(stats.Transitions(event.transition.from, event.transition.to));
      open_seen_.push_back(snapshot.has_value() && snapshot->state == BreakerState::kOpen);
    }
    entered.store(true);
    if (block_ > absl::ZeroDuration()) absl::SleepFor(block_);
    left.fetch_add(1);
  }

  std::vector<int64_t> transitions_seen() {
    MutexLock lock(&mu_);
    return transitions_seen_;
  }
  std::vector<bool> open_seen() {
    MutexLock lock(&mu_);
    return open_seen_;
  }

  // Set before any call. Weak: the channel's resilience holds this listener,
  // and a strong reference back would keep both alive forever.
  std::weak_ptr<ClientResilience> resilience;
  std::atomic<bool> entered{false};
  std::atomic<int> left{0};

 private:
  const absl::Duration block_;
  Mutex mu_;
  std::vector<int64_t> transitions_seen_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> open_seen_ ABSL_GUARDED_BY(mu_);
};

// Waits (bounded) until `done` holds.
template <typename Done>
bool WaitFor(Done done, absl::Duration limit = absl::Seconds(10)) {
  const absl::Time until = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

class BreakerEventsTest : public ClientInterceptorsTest,
                          public ::testing::WithParamInterface<std::tuple<Flavour, bool>> {
 protected:
  Flavour flavour() const { return std::get<0>(GetParam()); }
  bool retried() const { return std::get<1>(GetParam()); }

  std::shared_ptr<ReadingListener> ConnectWith(absl::Duration block) {
    auto listener = std::make_shared<ReadingListener>(block);
    Connect(Policy(retried()), Clock::Real(), listener);
    listener->resilience = resilience_;
    return listener;
  }

  // Failing unary calls until the breaker opened (at most 4).
  void Trip() {
    service_.FailNext(1000);
    for (int i = 0; i < 4; ++i) {
      MakeCall(*stub_, CallType::kUnary, flavour());
      const std::optional<BreakerSnapshot> snapshot = resilience_->BreakerSnapshotOf(kUnary);
      if (snapshot.has_value() && snapshot->state == BreakerState::kOpen) return;
    }
  }
};

// The listener reads Stats() and BreakerSnapshotOf() back: no deadlock, and
// it sees the transition already counted and the breaker open.
TEST_P(BreakerEventsTest, ListenerMayReadTheLibraryBack) {
  std::shared_ptr<ReadingListener> listener = ConnectWith(absl::ZeroDuration());
  Trip();
  ASSERT_EQ(resilience_->BreakerSnapshotOf(kUnary)->state, BreakerState::kOpen);
  ASSERT_TRUE(WaitFor([&] { return listener->left.load() >= 1; }));
  EXPECT_EQ(listener->transitions_seen().at(0), 1);
  EXPECT_TRUE(listener->open_seen().at(0));
  EXPECT_EQ(Stats(kUnary).Transitions(BreakerState::kClosed, BreakerState::kOpen), 1);
}

// A listener that blocks for a second stalls no other call: while it is
// blocked, a call of the same flavour completes well within the second,
// and so does the call that caused the event, unless its caller blocks
// anyway (a sync stub's thread, which the event is delivered on).
TEST_P(BreakerEventsTest, BlockingListenerStallsNoOtherCall) {
  constexpr absl::Duration kBlock = absl::Seconds(1);
  constexpr absl::Duration kBound = absl::Milliseconds(500);
  std::shared_ptr<ReadingListener> listener = ConnectWith(kBlock);
  absl::Duration tripping_took;
  std::thread tripper([&] {
    const absl::Time start = absl::Now();
    Trip();
    tripping_took = absl::Now() - start;
  });
  ASSERT_TRUE(WaitFor([&] { return listener->entered.load(); }));
  // The listener is blocked now: other calls go on.
  const absl::Time start = absl::Now();
  CallResult other = MakeCall(*stub_, CallType::kServerStream, flavour());
  const absl::Duration other_took = absl::Now() - start;
  const bool listener_still_blocked = listener->left.load() == 0;
  // Answered by the server (which still fails every call as scripted).
  EXPECT_TRUE(other.status.ok() || other.status.error_message() == "scripted failure")
      << other.status.error_message();
  EXPECT_LT(other_took, kBound);
  EXPECT_TRUE(listener_still_blocked);
  // Nor a retried call on another channel, whose attempts complete on the
  // same process-wide AttemptCompletionQueue thread as this channel's.
  absl::StatusOr<PolicySet> retry_only = PolicySet::FromJsonString(
      R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
          "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
                          "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  ASSERT_TRUE(retry_only.ok()) << retry_only.status();
  ResilientChannel second = NewChainChannel(*server_, *std::move(retry_only), {});
  auto second_stub = resilience::test::TestService::NewStub(second.channel);
  const absl::Time second_start = absl::Now();
  CallResult retried = MakeCall(*second_stub, CallType::kUnary, flavour());
  EXPECT_TRUE(retried.status.ok() || retried.status.error_message() == "scripted failure")
      << retried.status.error_message();
  EXPECT_LT(absl::Now() - second_start, kBound);
  EXPECT_EQ(listener->left.load(), 0);  // still blocked meanwhile
  // A rejected call of the tripped method is not held up either.
  const absl::Time rejected_start = absl::Now();
  EXPECT_EQ(MakeCall(*stub_, CallType::kUnary, flavour()).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_LT(absl::Now() - rejected_start, kBound);
  tripper.join();
  if (flavour() != Flavour::kSync) {
    // Delivered on the EventsThread: the tripping calls did not wait.
    EXPECT_LT(tripping_took, kBlock);
  }
  ASSERT_TRUE(WaitFor([&] { return listener->left.load() >= 1; }));
  EXPECT_EQ(listener->transitions_seen().at(0), 1);
}

INSTANTIATE_TEST_SUITE_P(
    EveryStub, BreakerEventsTest,
    ::testing::Combine(::testing::Values(Flavour::kSync, Flavour::kAsync, Flavour::kCallback),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<Flavour, bool>>& info) {
      return std::string(Name(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "_retried" : "_single_attempt");
    });

}  // namespace
}  // namespace resilience::testing
