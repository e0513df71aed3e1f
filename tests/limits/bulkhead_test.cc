// Bulkhead: slots, the FIFO queue, and waits that end at min(maxWait, the
// call's deadline), on a simulated clock.

#include "src/limits/bulkhead.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/random_source.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using ::testing::HasSubstr;
using Entry = Bulkhead::Entry;

// A waiter that notes when it was granted a slot (on the clock).
class TestWaiter final : public Bulkhead::Waiter {
 public:
  explicit TestWaiter(Clock& clock) : clock_(clock) {}
  std::optional<absl::Time> granted_at;

 protected:
  void SlotGranted() override { granted_at = clock_.Now(); }

 private:
  Clock& clock_;
};

// A whole number in [0, n).
int Draw(RandomSource& random, int n) { return static_cast<int>(random.NextUniform() * n); }

Bulkhead::Options Options(int concurrency, int queue, absl::Duration wait) {
  Bulkhead::Options o;
  o.max_concurrency = concurrency;
  o.max_queue = queue;
  o.max_wait = wait;
  return o;
}

TEST(BulkheadTest, ValidateNamesFieldAndValue) {
  EXPECT_TRUE(Bulkhead::Validate(Options(1, 0, absl::ZeroDuration())).ok());
  EXPECT_THAT(Bulkhead::Validate(Options(0, 0, absl::ZeroDuration())).message(),
              HasSubstr("max_concurrency: must be >= 1, got 0"));
  EXPECT_THAT(Bulkhead::Validate(Options(1, -1, absl::ZeroDuration())).message(),
              HasSubstr("max_queue: must be >= 0, got -1"));
  EXPECT_THAT(Bulkhead::Validate(Options(1, 1, absl::Milliseconds(-5))).message(),
              HasSubstr("max_wait: must be >= 0 and finite, got -5ms"));
}

// Slots first, then the queue up to its bound, then rejections.
TEST(BulkheadTest, AdmitsQueuesThenRejects) {
  SimulatedClock clock;
  Bulkhead bulkhead(Options(2, 1, absl::Milliseconds(100)), clock);
  TestWaiter a(clock), b(clock), c(clock), d(clock);
  EXPECT_EQ(bulkhead.Enter(a, absl::InfiniteDuration()), Entry::kAdmitted);
  EXPECT_EQ(bulkhead.Enter(b, absl::InfiniteDuration()), Entry::kAdmitted);
  EXPECT_EQ(bulkhead.Enter(c, absl::InfiniteDuration()), Entry::kQueued);
  EXPECT_EQ(c.wait_until(), clock.Now() + absl::Milliseconds(100));
  EXPECT_EQ(bulkhead.Enter(d, absl::InfiniteDuration()), Entry::kQueueFull);
  Bulkhead::Stats s = bulkhead.stats();
  EXPECT_EQ(s.in_use, 2);
  EXPECT_EQ(s.queued, 1);
  EXPECT_EQ(s.admitted, 2u);
  EXPECT_EQ(s.rejected_full, 1u);
  // A slot freed goes to the waiter, not back to the pool.
  bulkhead.Leave();
  ASSERT_TRUE(c.granted_at.has_value());
  EXPECT_FALSE(bulkhead.EndWait(c));  // its timer, later: it holds the slot
  s = bulkhead.stats();
  EXPECT_EQ(s.in_use, 2);
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.granted, 1u);
  bulkhead.Leave();
  bulkhead.Leave();
  EXPECT_EQ(bulkhead.stats().in_use, 0);
}

TEST(BulkheadTest, NoQueueRejectsAtOnce) {
  SimulatedClock clock;
  Bulkhead bulkhead(Options(1, 0, absl::Seconds(1)), clock);
  TestWaiter a(clock), b(clock);
  EXPECT_EQ(bulkhead.Enter(a, absl::InfiniteDuration()), Entry::kAdmitted);
  EXPECT_EQ(bulkhead.Enter(b, absl::InfiniteDuration()), Entry::kQueueFull);
}

// No wait allowed (maxWait 0, or a deadline already due): rejected, not queued.
TEST(BulkheadTest, NoTimeToWaitIsARejection) {
  SimulatedClock clock;
  Bulkhead zero(Options(1, 5, absl::ZeroDuration()), clock);
  TestWaiter a(clock), b(clock), c(clock);
  EXPECT_EQ(zero.Enter(a, absl::InfiniteDuration()), Entry::kAdmitted);
  EXPECT_EQ(zero.Enter(b, absl::InfiniteDuration()), Entry::kNoTimeToWait);
  Bulkhead waits(Options(1, 5, absl::Seconds(1)), clock);
  EXPECT_EQ(waits.Enter(a, absl::InfiniteDuration()), Entry::kAdmitted);
  EXPECT_EQ(waits.Enter(c, absl::ZeroDuration()), Entry::kNoTimeToWait);
  EXPECT_EQ(waits.stats().queued, 0);
}

// The wait ends at the call's deadline when that comes before maxWait.
TEST(BulkheadTest, WaitEndsAtTheEarlierOfDeadlineAndMaxWait) {
  SimulatedClock clock;
  Bulkhead bulkhead(Options(1, 2, absl::Milliseconds(100)), clock);
  TestWaiter holder(clock), soon(clock), late(clock);
  ASSERT_EQ(bulkhead.Enter(holder, absl::InfiniteDuration()), Entry::kAdmitted);
  ASSERT_EQ(bulkhead.Enter(soon, absl::Milliseconds(30)), Entry::kQueued);
  ASSERT_EQ(bulkhead.Enter(late, absl::Seconds(5)), Entry::kQueued);
  EXPECT_EQ(soon.wait_until(), clock.Now() + absl::Milliseconds(30));
  EXPECT_EQ(late.wait_until(), clock.Now() + absl::Milliseconds(100));
}

// A waiter whose deadline passed is never granted a slot: the slot goes to
// the next one, and the late one's EndWait() says it has none.
TEST(BulkheadTest, QueuedCallPastItsDeadlineIsNeverGranted) {
  SimulatedClock clock;
  Bulkhead bulkhead(Options(1, 2, absl::Milliseconds(100)), clock);
  TestWaiter holder(clock), short_deadline(clock), next(clock);
  ASSERT_EQ(bulkhead.Enter(holder, absl::InfiniteDuration()), Entry::kAdmitted);
  ASSERT_EQ(bulkhead.Enter(short_deadline, absl::Milliseconds(20)), Entry::kQueued);
  ASSERT_EQ(bulkhead.Enter(next, absl::InfiniteDuration()), Entry::kQueued);
  clock.AdvanceTime(absl::Milliseconds(20));  // exactly its deadline
  bulkhead.Leave();
  EXPECT_FALSE(short_deadline.granted_at.has_value());
  ASSERT_TRUE(next.granted_at.has_value());
  EXPECT_TRUE(bulkhead.EndWait(short_deadline));  // its timer: no slot
  EXPECT_EQ(bulkhead.stats().expired, 1u);
  EXPECT_EQ(bulkhead.stats().in_use, 1);
}

// A cancelled or timed-out waiter leaves the queue; the others keep order.
TEST(BulkheadTest, EndWaitRemovesFromTheMiddleKeepingFifo) {
  SimulatedClock clock;
  Bulkhead bulkhead(Options(1, 3, absl::Seconds(1)), clock);
  TestWaiter holder(clock), w1(clock), w2(clock), w3(clock);
  ASSERT_EQ(bulkhead.Enter(holder, absl::InfiniteDuration()), Entry::kAdmitted);
  ASSERT_EQ(bulkhead.Enter(w1, absl::InfiniteDuration()), Entry::kQueued);
  ASSERT_EQ(bulkhead.Enter(w2, absl::InfiniteDuration()), Entry::kQueued);
  ASSERT_EQ(bulkhead.Enter(w3, absl::InfiniteDuration()), Entry::kQueued);
  EXPECT_TRUE(bulkhead.EndWait(w2));
  EXPECT_TRUE(bulkhead.EndWait(w2));  // twice: still no slot
  EXPECT_EQ(bulkhead.stats().queued, 2);
  bulkhead.Leave();
  EXPECT_TRUE(w1.granted_at.has_value());
  EXPECT_FALSE(w3.granted_at.has_value());
  bulkhead.Leave();
  EXPECT_TRUE(w3.granted_at.has_value());
  EXPECT_FALSE(w2.granted_at.has_value());
  bulkhead.Leave();
  EXPECT_EQ(bulkhead.stats().in_use, 0);
  // The queue is empty again: the next call is admitted at once.
  TestWaiter again(clock);
  EXPECT_EQ(bulkhead.Enter(again, absl::InfiniteDuration()), Entry::kAdmitted);
}

// Many calls with random deadlines, holding times and arrivals, driven on
// simulated time with a timer per waiter as the client arms one: no call is
// ever granted a slot at or after its deadline, at most maxConcurrency hold
// one at once, and every call ends (admitted, granted, or rejected).
TEST(BulkheadTest, QueuedCallNeverOutlivesItsDeadline) {
  SimulatedClock clock;
  const Bulkhead::Options options = Options(3, 8, absl::Milliseconds(80));
  Bulkhead bulkhead(options, clock);
  SplitMixRandom random(7);
  struct Call {
    std::unique_ptr<TestWaiter> waiter;
    absl::Time deadline;
    absl::Duration hold;
    std::optional<absl::Time> ends_at;  // when it leaves, once it holds a slot
    bool waiting = false;
    bool done = false;
  };
  std::deque<Call> calls;
  int holding = 0;
  int max_holding = 0;
  int granted = 0;
  int expired = 0;
  for (int tick = 0; tick < 4000; ++tick) {
    const absl::Time now = clock.Now();
    // Holders whose work is done leave (one at a time, in order of calls).
    for (Call& c : calls) {
      if (c.ends_at.has_value() && !c.done && *c.ends_at <= now) {
        c.done = true;
        --holding;
        bulkhead.Leave();
      }
    }
    for (Call& c : calls) {
      if (c.waiting && c.waiter->granted_at.has_value()) {
        // Granted inside a Leave() above: before its deadline, always.
        ASSERT_LT(*c.waiter->granted_at, c.deadline);
        ASSERT_LT(*c.waiter->granted_at, c.waiter->wait_until() + absl::Nanoseconds(1));
        c.waiting = false;
        ++granted;
        ++holding;
        c.ends_at = now + c.hold;
      } else if (c.waiting && c.waiter->wait_until() <= now) {
        // Its timer fires.
        ASSERT_TRUE(bulkhead.EndWait(*c.waiter));
        c.waiting = false;
        c.done = true;
        ++expired;
      }
    }
    max_holding = std::max(max_holding, holding);
    ASSERT_LE(holding, options.max_concurrency);
    // New arrivals.
    const int arrivals = static_cast<int>(Draw(random, 3));
    for (int i = 0; i < arrivals; ++i) {
      Call c;
      c.waiter = std::make_unique<TestWaiter>(clock);
      c.deadline = now + absl::Milliseconds(1 + Draw(random, 150));
      c.hold = absl::Milliseconds(1 + Draw(random, 6));
      switch (bulkhead.Enter(*c.waiter, c.deadline - now)) {
        case Entry::kAdmitted:
          ++holding;
          c.ends_at = now + c.hold;
          break;
        case Entry::kQueued:
          ASSERT_LE(c.waiter->wait_until(), c.deadline);
          c.waiting = true;
          break;
        case Entry::kQueueFull:
        case Entry::kNoTimeToWait:
          c.done = true;
          break;
      }
      calls.push_back(std::move(c));
    }
    clock.AdvanceTime(absl::Milliseconds(1));
  }
  EXPECT_EQ(max_holding, options.max_concurrency);
  EXPECT_GT(granted, 100);
  EXPECT_GT(expired, 10);
  EXPECT_GT(bulkhead.stats().rejected_full, 10u);
}

// Under real threads the count of holders never passes the limit.
TEST(BulkheadTest, ThreadsNeverExceedTheLimit) {
  SimulatedClock clock;
  Bulkhead bulkhead(Options(2, 0, absl::ZeroDuration()), clock);
  std::atomic<int> holding{0};
  std::atomic<int> max_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        TestWaiter w(clock);
        if (bulkhead.Enter(w, absl::InfiniteDuration()) != Entry::kAdmitted) continue;
        const int now = holding.fetch_add(1) + 1;
        int seen = max_seen.load();
        while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
        }
        holding.fetch_sub(1);
        bulkhead.Leave();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(max_seen.load(), 2);
  EXPECT_EQ(bulkhead.stats().in_use, 0);
}

}  // namespace
}  // namespace resilience
