#include "src/core/timeout_scheduler.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "src/policy/method_policy.h"

namespace resilience {
namespace {

// A timer that runs `callback` when it fires.
class FunctionTimer final : public TimeoutScheduler::Timer {
 public:
  FunctionTimer() = default;
  explicit FunctionTimer(std::function<void()> callback) : callback_(std::move(callback)) {}
  void set_callback(std::function<void()> callback) { callback_ = std::move(callback); }

 private:
  void Fire() override { callback_(); }
  std::function<void()> callback_;
};

// Timers fire no earlier than their time, from many scheduling threads at
// once.
TEST(TimeoutSchedulerTest, FiresEachTimerAtItsTime) {
  TimeoutScheduler scheduler;
  std::atomic<int> ran{0};
  std::atomic<int> early{0};
  absl::Notification all_done;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::vector<FunctionTimer> timers(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const absl::Time when = Clock::Real().Now() + absl::Milliseconds((i * 7 + t) % 50);
        FunctionTimer& timer = timers[t * kPerThread + i];
        timer.set_callback([&, when] {
          if (Clock::Real().Now() < when) early++;
          if (++ran == kThreads * kPerThread) all_done.Notify();
        });
        scheduler.Schedule(&timer, when);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(all_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(early.load(), 0);
  // Fired: nothing to cancel, but the last Fire() may still be running.
  for (FunctionTimer& timer : timers) EXPECT_FALSE(scheduler.Cancel(&timer));
  EXPECT_EQ(scheduler.pending(), 0u);
}

// A timer earlier than everything pending wakes the thread at once.
TEST(TimeoutSchedulerTest, EarlierTimerWakesTheThread) {
  TimeoutScheduler scheduler;
  absl::Notification late_fired, soon_fired;
  FunctionTimer late([&] { late_fired.Notify(); });
  FunctionTimer soon([&] { soon_fired.Notify(); });
  scheduler.Schedule(&late, Clock::Real().Now() + absl::Seconds(30));
  const absl::Time start = Clock::Real().Now();
  scheduler.Schedule(&soon, Clock::Real().Now() + absl::Milliseconds(10));
  ASSERT_TRUE(soon_fired.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_LT(Clock::Real().Now() - start, absl::Seconds(1));
  EXPECT_FALSE(late_fired.HasBeenNotified());
  EXPECT_TRUE(scheduler.Cancel(&late));
}

// Cancelled timers never fire, wherever they are in the heap; the others
// still fire, in time order.
TEST(TimeoutSchedulerTest, CancelledTimersNeverFire) {
  TimeoutScheduler scheduler;
  constexpr int kTimers = 200;
  std::vector<FunctionTimer> timers(kTimers);
  std::mutex mu;
  std::vector<int> fired;
  absl::Notification last;
  const absl::Time base = Clock::Real().Now() + absl::Milliseconds(50);
  for (int i = 0; i < kTimers; ++i) {
    timers[i].set_callback([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      fired.push_back(i);
      if (i == kTimers - 1) last.Notify();
    });
    // Scrambled order of times: i * 37 mod kTimers is a permutation.
    scheduler.Schedule(&timers[i], base + absl::Microseconds(100) * ((i * 37) % kTimers) +
                                       absl::Milliseconds(i == kTimers - 1 ? 100 : 0));
  }
  for (int i = 0; i < kTimers; i += 3) EXPECT_TRUE(scheduler.Cancel(&timers[i]));
  ASSERT_TRUE(last.WaitForNotificationWithTimeout(absl::Seconds(10)));
  for (int i = 0; i < kTimers; ++i) scheduler.Cancel(&timers[i]);  // wait for every Fire()
  EXPECT_EQ(scheduler.pending(), 0u);
  std::lock_guard<std::mutex> lock(mu);
  std::vector<int> expected;
  for (int i = 0; i < kTimers; ++i) {
    if (i % 3 != 0) expected.push_back(i);
  }
  std::vector<int> sorted = fired;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, expected);
  for (size_t k = 1; k + 1 < fired.size(); ++k) {
    EXPECT_LT((fired[k - 1] * 37) % kTimers, (fired[k] * 37) % kTimers) << "at " << k;
  }
}

// Cancel() of a timer that is firing waits until Fire() has returned, so the
// owner may destroy the timer right after.
TEST(TimeoutSchedulerTest, CancelWaitsForAFireInProgress) {
  TimeoutScheduler scheduler;
  absl::Notification entered, release;
  std::atomic<bool> finished{false};
  FunctionTimer timer([&] {
    entered.Notify();
    release.WaitForNotification();
    finished = true;
  });
  scheduler.Schedule(&timer, Clock::Real().Now());
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(absl::Seconds(5)));
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(20));
    release.Notify();
  });
  EXPECT_FALSE(scheduler.Cancel(&timer));
  EXPECT_TRUE(finished.load());
  releaser.join();
}

// A timer may cancel itself from its own Fire() without waiting for itself.
TEST(TimeoutSchedulerTest, CancelFromFireDoesNotDeadlock) {
  TimeoutScheduler scheduler;
  absl::Notification done;
  FunctionTimer timer;
  timer.set_callback([&] {
    EXPECT_FALSE(scheduler.Cancel(&timer));
    done.Notify();
  });
  scheduler.Schedule(&timer, Clock::Real().Now());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_FALSE(scheduler.Cancel(&timer));  // waits for the Fire() to return
}

// Timers at absl::InfiniteFuture(), at the 1e10 s timeout that used to hang
// every call (the wait overflowed the steady clock, returned at once, and the
// thread spun with the lock) and at the longest timeout the policy loader
// allows, each in turn the earliest: none fires, the thread sleeps, an
// earlier timer still fires on time, and all of them can be cancelled.
TEST(TimeoutSchedulerTest, ExtremeTimersNeitherFireNorSpin) {
  TimeoutScheduler scheduler;
  std::atomic<int> far_fired{0};
  FunctionTimer forever([&] { far_fired++; });
  FunctionTimer huge([&] { far_fired++; });
  FunctionTimer longest_policy([&] { far_fired++; });
  const std::pair<FunctionTimer*, absl::Duration> timers[] = {
      {&forever, absl::InfiniteDuration()},
      {&huge, absl::Seconds(10000000000)},
      {&longest_policy, kMaxPolicyCallTime},
  };
  uint64_t wakeups = scheduler.wakeups();
  for (const auto& [timer, after] : timers) {
    // Each is earlier than the ones before: the thread's next sleep is for it.
    scheduler.Schedule(timer, Clock::Real().Now() + after);
    // A spinning thread wakes millions of times in this.
    absl::SleepFor(absl::Milliseconds(100));
    EXPECT_LE(scheduler.wakeups(), wakeups + 2) << absl::FormatDuration(after);
    wakeups = scheduler.wakeups();
  }

  absl::Notification soon_fired;
  FunctionTimer soon([&] { soon_fired.Notify(); });
  const absl::Time start = Clock::Real().Now();
  scheduler.Schedule(&soon, start + absl::Milliseconds(20));
  ASSERT_TRUE(soon_fired.WaitForNotificationWithTimeout(absl::Seconds(5)));
  const absl::Duration took = Clock::Real().Now() - start;
  EXPECT_GE(took, absl::Milliseconds(20));
  EXPECT_LT(took, absl::Seconds(1));
  EXPECT_FALSE(scheduler.Cancel(&soon));

  // Back to sleep until the earliest far timer; cancelling it (the earliest)
  // leaves the thread asleep too.
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_LE(scheduler.wakeups(), wakeups + 5);
  EXPECT_EQ(far_fired.load(), 0);
  EXPECT_EQ(scheduler.pending(), 3u);
  EXPECT_TRUE(scheduler.Cancel(&longest_policy));
  EXPECT_TRUE(scheduler.Cancel(&huge));
  EXPECT_TRUE(scheduler.Cancel(&forever));
  EXPECT_FALSE(scheduler.Cancel(&forever));
  EXPECT_EQ(scheduler.pending(), 0u);
  EXPECT_EQ(far_fired.load(), 0);
}

// The thread's wait is bounded by kMaxSleep whatever the earliest timer:
// one extreme timer alone leaves the thread asleep, and a timer scheduled
// before it (in the heap's order) wakes the thread at once.
TEST(TimeoutSchedulerTest, InfiniteTimerAloneThenAnEarlierOne) {
  TimeoutScheduler scheduler;
  FunctionTimer forever([] { ADD_FAILURE() << "an infinite timer fired"; });
  scheduler.Schedule(&forever, absl::InfiniteFuture());
  absl::SleepFor(absl::Milliseconds(100));
  const uint64_t asleep = scheduler.wakeups();
  EXPECT_LE(asleep, 2u);
  absl::Notification fired;
  FunctionTimer now_timer([&] { fired.Notify(); });
  scheduler.Schedule(&now_timer, Clock::Real().Now());
  ASSERT_TRUE(fired.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_FALSE(scheduler.Cancel(&now_timer));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_LE(scheduler.wakeups(), asleep + 3);
  EXPECT_TRUE(scheduler.Cancel(&forever));
  EXPECT_GE(TimeoutScheduler::kMaxSleep, absl::Seconds(1));
}

// A scheduler with an infinite timer pending stops at once when destroyed
// (the destructor does not wait for the timer).
TEST(TimeoutSchedulerTest, StopsPromptlyWithAnInfiniteTimerPending) {
  FunctionTimer forever([] { ADD_FAILURE() << "an infinite timer fired"; });
  const absl::Time start = Clock::Real().Now();
  {
    TimeoutScheduler scheduler;
    scheduler.Schedule(&forever, Clock::Real().Now() + absl::InfiniteDuration());
    absl::SleepFor(absl::Milliseconds(20));
    EXPECT_TRUE(scheduler.Cancel(&forever));
    scheduler.Schedule(&forever, absl::InfiniteFuture());
  }
  EXPECT_LT(Clock::Real().Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace resilience
