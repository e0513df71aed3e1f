#include "src/client_interceptors/timeout_scheduler.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

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
        const absl::Time when = absl::Now() + absl::Milliseconds((i * 7 + t) % 50);
        FunctionTimer& timer = timers[t * kPerThread + i];
        timer.set_callback([&, when] {
          if (absl::Now() < when) early++;
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
  scheduler.Schedule(&late, absl::Now() + absl::Seconds(30));
  const absl::Time start = absl::Now();
  scheduler.Schedule(&soon, absl::Now() + absl::Milliseconds(10));
  ASSERT_TRUE(soon_fired.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
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
  const absl::Time base = absl::Now() + absl::Milliseconds(50);
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
  scheduler.Schedule(&timer, absl::Now());
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
  scheduler.Schedule(&timer, absl::Now());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_FALSE(scheduler.Cancel(&timer));  // waits for the Fire() to return
}

}  // namespace
}  // namespace resilience
