#include "src/server_interceptors/proceed_executor.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

// Tasks that block do not hold up the others: each gets a thread while there
// are fewer than the maximum.
TEST(ProceedExecutorTest, BlockingTasksDoNotStarveOthers) {
  ProceedExecutor executor(16);
  absl::Notification release;
  std::atomic<int> started{0};
  for (int i = 0; i < 8; ++i) {
    executor.Run([&] {
      started++;
      release.WaitForNotificationWithTimeout(absl::Seconds(10));
    });
  }
  absl::Notification quick;
  executor.Run([&] { quick.Notify(); });
  EXPECT_TRUE(quick.WaitForNotificationWithTimeout(absl::Seconds(10)));
  release.Notify();
}

// Destruction runs every queued task and joins the threads.
TEST(ProceedExecutorTest, DestructionRunsEverythingQueued) {
  std::atomic<int> ran{0};
  {
    ProceedExecutor executor(2);
    for (int i = 0; i < 1000; ++i) executor.Run([&] { ran++; });
  }
  EXPECT_EQ(ran.load(), 1000);
}

}  // namespace
}  // namespace resilience
