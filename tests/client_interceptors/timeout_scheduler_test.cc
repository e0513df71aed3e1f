#include "src/client_interceptors/timeout_scheduler.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

// Callbacks run no earlier than their time, in time order, from many
// scheduling threads at once.
TEST(TimeoutSchedulerTest, RunsEachCallbackAtItsTime) {
  TimeoutScheduler scheduler;
  std::atomic<int> ran{0};
  std::atomic<int> early{0};
  absl::Notification all_done;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const absl::Time when = absl::Now() + absl::Milliseconds((i * 7 + t) % 50);
        scheduler.Schedule(when, [&, when] {
          if (absl::Now() < when) early++;
          if (++ran == kThreads * kPerThread) all_done.Notify();
        });
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(all_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(early.load(), 0);
}

// An entry earlier than everything pending wakes the thread at once.
TEST(TimeoutSchedulerTest, EarlierEntryWakesTheThread) {
  TimeoutScheduler scheduler;
  absl::Notification late, soon;
  scheduler.Schedule(absl::Now() + absl::Seconds(30), [&] { late.Notify(); });
  const absl::Time start = absl::Now();
  scheduler.Schedule(absl::Now() + absl::Milliseconds(10), [&] { soon.Notify(); });
  ASSERT_TRUE(soon.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_FALSE(late.HasBeenNotified());
}  // destruction with an entry pending joins the thread

}  // namespace
}  // namespace resilience
