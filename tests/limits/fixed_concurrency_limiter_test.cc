// FixedConcurrencyLimiter: exactly the limit, under contention too, and the
// bound Validate() puts on it.

#include "src/limits/fixed_concurrency_limiter.h"

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;

// N slots are handed out, the next is refused, a release frees one.
TEST(FixedConcurrencyLimiterTest, HandsOutExactlyTheLimit) {
  FixedConcurrencyLimiter limiter(3);
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_FALSE(limiter.TryAcquire());
  EXPECT_EQ(limiter.in_flight(), 3);
  limiter.Release(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_EQ(limiter.in_flight(), 2);
  EXPECT_TRUE(limiter.TryAcquire());
  EXPECT_EQ(limiter.limit(), 3);
}

// Threads racing for slots never exceed the limit and end at zero.
TEST(FixedConcurrencyLimiterTest, NeverExceedsTheLimitUnderContention) {
  FixedConcurrencyLimiter limiter(2);
  std::atomic<int> holders{0};
  std::atomic<int> max_holders{0};
  std::atomic<int64_t> acquired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!limiter.TryAcquire()) continue;
        acquired.fetch_add(1);
        const int now = holders.fetch_add(1) + 1;
        int seen = max_holders.load();
        while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
        }
        holders.fetch_sub(1);
        limiter.Release(Outcome::kSuccess, absl::ZeroDuration());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(max_holders.load(), 2);
  EXPECT_GT(acquired.load(), 0);
  EXPECT_EQ(limiter.in_flight(), 0);
}

// A limit below 1 is refused with the field and the value named; Create()
// and Validate() agree, and what Create() makes has the limit asked for.
TEST(FixedConcurrencyLimiterTest, Validation) {
  for (int64_t bad : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min()}) {
    absl::StatusOr<std::unique_ptr<FixedConcurrencyLimiter>> limiter =
        FixedConcurrencyLimiter::Create(bad);
    EXPECT_EQ(limiter.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(limiter.status().message(),
                HasSubstr(absl::StrCat("max_concurrency: must be >= 1, got ", bad)));
    EXPECT_EQ(FixedConcurrencyLimiter::Validate(bad), limiter.status());
  }
  EXPECT_THAT(FixedConcurrencyLimiter::Validate(0).message(),
              HasSubstr("max_concurrency: must be >= 1, got 0"));
  for (int64_t good : {int64_t{1}, int64_t{64}, std::numeric_limits<int64_t>::max()}) {
    EXPECT_TRUE(FixedConcurrencyLimiter::Validate(good).ok()) << good;
    absl::StatusOr<std::unique_ptr<FixedConcurrencyLimiter>> limiter =
        FixedConcurrencyLimiter::Create(good);
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    EXPECT_EQ((*limiter)->limit(), good);
    EXPECT_EQ((*limiter)->in_flight(), 0);
  }
}

}  // namespace
}  // namespace resilience
