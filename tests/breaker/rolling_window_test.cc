#include "src/breaker/rolling_window.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

class RollingWindowTest : public ::testing::Test {
 protected:
  // 1 s in 10 buckets of 100 ms.
  RollingWindowTest() : window_(absl::Seconds(1), 10) {}

  SimulatedClock clock_;
  RollingWindow window_;
};

// Counts added in the window are summed per counter.
TEST_F(RollingWindowTest, SumsEachCounter) {
  window_.Add(clock_.Now(), RollingWindow::kSuccess, 3);
  window_.Add(clock_.Now(), RollingWindow::kFailure, 2);
  window_.Add(clock_.Now(), RollingWindow::kRejected);
  window_.Add(clock_.Now(), RollingWindow::kSlow);
  RollingWindow::Counts c = window_.Sum(clock_.Now());
  EXPECT_EQ(c.success, 3);
  EXPECT_EQ(c.failure, 2);
  EXPECT_EQ(c.rejected, 1);
  EXPECT_EQ(c.slow, 1);
  EXPECT_EQ(c.completed(), 5);
}

// Buckets leave the window one by one as time passes.
TEST_F(RollingWindowTest, BucketsExpireAsTimePasses) {
  for (int i = 0; i < 10; ++i) {
    window_.Add(clock_.Now(), RollingWindow::kSuccess);
    clock_.AdvanceTime(absl::Milliseconds(100));
  }
  // Now in the 11th period: the first bucket has left.
  EXPECT_EQ(window_.Sum(clock_.Now()).success, 9);
  clock_.AdvanceTime(absl::Milliseconds(500));
  EXPECT_EQ(window_.Sum(clock_.Now()).success, 4);
  clock_.AdvanceTime(absl::Hours(1));
  EXPECT_EQ(window_.Sum(clock_.Now()), RollingWindow::Counts());
}

// A time older than the window adds nothing; an older time inside it counts.
TEST_F(RollingWindowTest, LateAddsInsideTheWindowCountOthersAreDropped) {
  const absl::Time start = clock_.Now();
  clock_.AdvanceTime(absl::Seconds(5));
  window_.Add(clock_.Now(), RollingWindow::kSuccess);
  window_.Add(start, RollingWindow::kFailure);  // 5 s ago: out of the window
  window_.Add(clock_.Now() - absl::Milliseconds(500), RollingWindow::kFailure);
  RollingWindow::Counts c = window_.Sum(clock_.Now());
  EXPECT_EQ(c.success, 1);
  EXPECT_EQ(c.failure, 1);
}

// Reset clears everything.
TEST_F(RollingWindowTest, ResetClears) {
  window_.Add(clock_.Now(), RollingWindow::kFailure, 7);
  window_.Reset(clock_.Now());
  EXPECT_EQ(window_.Sum(clock_.Now()), RollingWindow::Counts());
  window_.Add(clock_.Now(), RollingWindow::kFailure);
  EXPECT_EQ(window_.Sum(clock_.Now()).failure, 1);
}

// TrailingBuckets walks back over complete buckets only.
TEST_F(RollingWindowTest, TrailingBucketsSkipsTheCurrentOne) {
  window_.Add(clock_.Now(), RollingWindow::kFailure);
  for (int i = 0; i < 3; ++i) {
    clock_.AdvanceTime(absl::Milliseconds(100));
    window_.Add(clock_.Now(), RollingWindow::kSuccess);
  }
  clock_.AdvanceTime(absl::Milliseconds(100));
  window_.Add(clock_.Now(), RollingWindow::kFailure);  // current bucket: ignored
  auto healthy = [](const RollingWindow::Counts& c) { return c.success > 0 && c.failure == 0; };
  EXPECT_EQ(window_.TrailingBuckets(clock_.Now(), healthy), 3);
}

// Window and bucket settings are validated with the field named.
TEST(RollingWindowValidateTest, RefusesBadSettings) {
  EXPECT_TRUE(RollingWindow::Validate(absl::Seconds(10), 40, "x").ok());
  EXPECT_THAT(RollingWindow::Validate(absl::Seconds(10), 0, "x").message(),
              HasSubstr("x.buckets: must be in [1, 1000], got 0"));
  EXPECT_THAT(RollingWindow::Validate(absl::ZeroDuration(), 10, "x").message(),
              HasSubstr("x.window: must be >= 1ms"));
  EXPECT_THAT(RollingWindow::Validate(absl::Seconds(1), 3, "x").message(),
              HasSubstr("does not divide into 3 buckets"));
  EXPECT_THAT(RollingWindow::Validate(absl::Microseconds(1500), 1, "x").message(),
              HasSubstr("x.window"));
}

// Concurrent adds are never lost while the clock stands still.
TEST_F(RollingWindowTest, ConcurrentAddsAddUpExactly) {
  constexpr int kThreads = 4;
  constexpr int kAdds = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < kAdds; ++i) {
        window_.Add(clock_.Now(), t % 2 == 0 ? RollingWindow::kSuccess : RollingWindow::kFailure);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  RollingWindow::Counts c = window_.Sum(clock_.Now());
  EXPECT_EQ(c.success, 2 * kAdds);
  EXPECT_EQ(c.failure, 2 * kAdds);
}

// Adds racing with rotation never make a count negative or larger than what
// was added, and an idle window drains to zero.
TEST_F(RollingWindowTest, ConcurrentAddsWhileTimeMoves) {
  std::atomic<bool> stop{false};
  std::thread ticker([&] {
    for (int i = 0; i < 2000; ++i) clock_.AdvanceTime(absl::Milliseconds(7));
    stop = true;
  });
  std::vector<std::thread> writers;
  std::atomic<int64_t> added{0};
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&] {
      while (!stop) {
        added.fetch_add(1);  // before the add, so that Sum() <= added holds
        window_.Add(clock_.Now(), RollingWindow::kSuccess);
        RollingWindow::Counts c = window_.Sum(clock_.Now());
        ASSERT_GE(c.success, 0);
        ASSERT_LE(c.success, added.load());
      }
    });
  }
  ticker.join();
  for (std::thread& t : writers) t.join();
  clock_.AdvanceTime(absl::Seconds(2));
  EXPECT_EQ(window_.Sum(clock_.Now()), RollingWindow::Counts());
}

}  // namespace
}  // namespace resilience
