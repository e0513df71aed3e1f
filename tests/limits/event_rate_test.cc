// EventRate: the sliding two-window estimate, on given times (no clock).

#include "src/limits/event_rate.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace resilience {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST(EventRateTest, CountsTheCurrentWindowAndTheShareOfTheLastStillInView) {
  EventRate rate;
  EXPECT_EQ(rate.PerSecond(kT0), 0);
  for (int i = 0; i < 10; ++i) rate.Add(kT0 + absl::Milliseconds(100 * i));
  EXPECT_DOUBLE_EQ(rate.PerSecond(kT0 + absl::Milliseconds(950)), 10);
  // A quarter into the next window: three quarters of the last one count.
  EXPECT_DOUBLE_EQ(rate.PerSecond(kT0 + absl::Milliseconds(1250)), 7.5);
  rate.Add(kT0 + absl::Milliseconds(1300));
  rate.Add(kT0 + absl::Milliseconds(1400));
  EXPECT_DOUBLE_EQ(rate.PerSecond(kT0 + absl::Milliseconds(1500)), 5 + 2);
  // Two windows on, the old counts are gone, even in a reused slot.
  EXPECT_EQ(rate.PerSecond(kT0 + absl::Milliseconds(3000)), 0);
  rate.Add(kT0 + absl::Milliseconds(2100));
  EXPECT_DOUBLE_EQ(rate.PerSecond(kT0 + absl::Milliseconds(2100)), 0.9 * 2 + 1);
}

TEST(EventRateTest, ScalesWithTheWindow) {
  EventRate rate(absl::Milliseconds(100));
  for (int i = 0; i < 5; ++i) rate.Add(kT0 + absl::Milliseconds(10 * i));
  EXPECT_DOUBLE_EQ(rate.PerSecond(kT0 + absl::Milliseconds(50)), 50);
}

TEST(EventRateTest, ConcurrentAddsAreAllCounted) {
  EventRate rate;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) rate.Add(kT0 + absl::Milliseconds(500));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_DOUBLE_EQ(rate.PerSecond(kT0 + absl::Milliseconds(999)), 40000);
}

}  // namespace
}  // namespace resilience
