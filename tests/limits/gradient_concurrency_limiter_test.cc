// GradientConcurrencyLimiter on a SimulatedClock, in front of a simulated
// backend of N workers with a fixed service time: the baseline it measures,
// where its limit settles, how it follows a change of capacity, that it does
// not grow on a load that never needs it, the periodic re-measurement, and
// the bounds Validate() puts on its options.

#include "src/limits/gradient_concurrency_limiter.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/limits/gradient_limiter_testing.h"

namespace resilience {
namespace {

using ::resilience::testing::MustCreate;
using ::resilience::testing::WithinABucket;
using ::testing::HasSubstr;

// A backend of `workers` workers, each call taking `service`; calls wait in
// a FIFO queue for a worker. Time moves in 1 ms steps; `rate` calls arrive
// per step (offered load), each asking the limiter first.
class Backend {
 public:
  Backend(SimulatedClock& clock, ConcurrencyLimiter& limiter, int workers, absl::Duration service)
      : clock_(clock), limiter_(limiter), workers_(workers), service_(service) {}

  void set_workers(int workers) { workers_ = workers; }
  void set_service(absl::Duration service) { service_ = service; }

  // Runs `duration` with `per_ms` arrivals each millisecond.
  void Run(absl::Duration duration, int per_ms) {
    const absl::Time end = clock_.Now() + duration;
    while (clock_.Now() < end) {
      for (int i = 0; i < per_ms; ++i) {
        if (limiter_.TryAcquire()) {
          queue_.push_back(clock_.Now());
          ++admitted_;
        } else {
          ++rejected_;
        }
      }
      StartWork();
      clock_.AdvanceTime(absl::Milliseconds(1));
      Finish();
      max_in_flight_ = std::max(max_in_flight_, limiter_.in_flight());
    }
  }

  // Mean latency (admission to finish) of the calls finished since the last
  // call to this.
  absl::Duration TakeMeanLatency() {
    const absl::Duration mean = finished_ == 0 ? absl::ZeroDuration() : latency_sum_ / finished_;
    finished_ = 0;
    latency_sum_ = absl::ZeroDuration();
    return mean;
  }
  int64_t finished_total() const { return finished_total_; }
  int64_t rejected() const { return rejected_; }
  int64_t max_in_flight() const { return max_in_flight_; }
  void reset_max_in_flight() { max_in_flight_ = 0; }

 private:
  struct Job {
    absl::Time admitted;
    absl::Time done;
  };

  void StartWork() {
    while (static_cast<int>(running_.size()) < workers_ && !queue_.empty()) {
      running_.push_back(Job{queue_.front(), clock_.Now() + service_});
      queue_.pop_front();
    }
  }

  void Finish() {
    const absl::Time now = clock_.Now();
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->done <= now) {
        const absl::Duration latency = now - it->admitted;
        latency_sum_ += latency;
        ++finished_;
        ++finished_total_;
        limiter_.Release(Outcome::kSuccess, latency);
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    StartWork();
  }

  SimulatedClock& clock_;
  ConcurrencyLimiter& limiter_;
  int workers_;
  absl::Duration service_;
  std::deque<absl::Time> queue_;
  std::vector<Job> running_;
  int64_t admitted_ = 0;
  int64_t rejected_ = 0;
  int64_t finished_ = 0;
  int64_t finished_total_ = 0;
  int64_t max_in_flight_ = 0;
  absl::Duration latency_sum_;
};

// It starts pinned at min_limit, measures the baseline on baseline_samples
// calls admitted under the pin, then comes back to initial_limit.
TEST(GradientConcurrencyLimiterTest, MeasuresTheBaselineFirstAtMinLimit) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  auto limiter = MustCreate(o, clock);
  EXPECT_TRUE(limiter->measuring());
  EXPECT_EQ(limiter->limit(), o.min_limit);
  EXPECT_EQ(limiter->baseline(), absl::InfiniteDuration());
  Backend backend(clock, *limiter, 16, absl::Milliseconds(10));
  // 20 samples at 3 in flight and 10 ms each: about 70 ms.
  backend.Run(absl::Milliseconds(60), 5);
  EXPECT_TRUE(limiter->measuring());
  EXPECT_LE(backend.max_in_flight(), o.min_limit);
  backend.Run(absl::Milliseconds(20), 5);
  EXPECT_FALSE(limiter->measuring());
  EXPECT_TRUE(WithinABucket(limiter->baseline(), absl::Milliseconds(10)));
  EXPECT_EQ(limiter->limit(), o.initial_limit);
}

// Overloaded (5x what 16 workers of 10 ms can serve), the limit settles
// between the workers and twice as many, and calls take less than twice
// the service time; the backend is kept busy.
TEST(GradientConcurrencyLimiterTest, SettlesNearTheBackendsConcurrencyUnderOverload) {
  SimulatedClock clock;
  auto limiter = MustCreate({}, clock);
  Backend backend(clock, *limiter, 16, absl::Milliseconds(10));
  backend.Run(absl::Seconds(3), 8);  // 8000/s against 1600/s
  backend.TakeMeanLatency();
  const int64_t before = backend.finished_total();
  for (int i = 0; i < 20; ++i) {
    backend.Run(absl::Milliseconds(100), 8);
    EXPECT_GE(limiter->limit(), 16) << "window " << i;
    EXPECT_LE(limiter->limit(), 32) << "window " << i;
  }
  EXPECT_LT(backend.TakeMeanLatency(), absl::Milliseconds(20));
  // 2 s at 1600/s: at least 95% of what the workers can do.
  EXPECT_GE(backend.finished_total() - before, 0.95 * 3200);
  EXPECT_GT(backend.rejected(), 0);
}

// Capacity halves (workers 16 -> 8): the limit follows within 2 s and
// latency comes back under twice the service time; capacity quadruples
// (8 -> 32): the limit grows past 32 within 2 s.
TEST(GradientConcurrencyLimiterTest, FollowsACapacityChangeWithinTwoSeconds) {
  SimulatedClock clock;
  auto limiter = MustCreate({}, clock);
  Backend backend(clock, *limiter, 16, absl::Milliseconds(10));
  backend.Run(absl::Seconds(3), 8);
  const int64_t at_16 = limiter->limit();
  EXPECT_GE(at_16, 16);

  backend.set_workers(8);
  backend.Run(absl::Seconds(2), 8);
  EXPECT_LE(limiter->limit(), 16);
  EXPECT_GE(limiter->limit(), 8);
  backend.TakeMeanLatency();
  backend.Run(absl::Seconds(1), 8);
  EXPECT_LT(backend.TakeMeanLatency(), absl::Milliseconds(20));

  backend.set_workers(32);
  backend.Run(absl::Seconds(2), 8);
  EXPECT_GE(limiter->limit(), 32);
  EXPECT_LE(limiter->limit(), 64);
}

// A light load (a quarter of capacity) never needs more than a few slots:
// the limit does not grow far past twice what is used.
TEST(GradientConcurrencyLimiterTest, DoesNotGrowWhileTheLoadLimitsTheCalls) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  o.initial_limit = 10;
  auto limiter = MustCreate(o, clock);
  Backend backend(clock, *limiter, 64, absl::Milliseconds(10));
  backend.Run(absl::Seconds(5), 1);  // 1000/s: 10 in flight
  EXPECT_LE(limiter->limit(), 2 * backend.max_in_flight() + 8);
  EXPECT_LT(limiter->limit(), 40);
}

// The limit grows only after a window in which it was reached: calls as
// fast as the baseline (a gradient that asks for growth) never grow a limit
// one slot short of binding, and do grow it once every slot was taken.
TEST(GradientConcurrencyLimiterTest, GrowsOnlyAfterAWindowThatReachedTheLimit) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  o.initial_limit = 20;
  auto limiter = MustCreate(o, clock);
  const absl::Duration latency = absl::Milliseconds(10);
  for (int i = 0; i < o.baseline_samples; ++i) {
    ASSERT_TRUE(limiter->TryAcquire());
    clock.AdvanceTime(latency);
    limiter->Release(Outcome::kSuccess, latency);
  }
  ASSERT_FALSE(limiter->measuring());
  ASSERT_TRUE(WithinABucket(limiter->baseline(), latency));
  ASSERT_EQ(limiter->limit(), 20);
  // `n` calls at once for a sample window, all finishing at the baseline.
  const auto window = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(limiter->TryAcquire());
    clock.AdvanceTime(o.sample_window);
    for (int64_t i = 0; i < n; ++i) limiter->Release(Outcome::kSuccess, latency);
  };
  for (int w = 0; w < 20; ++w) {
    window(limiter->limit() - 1);
    EXPECT_EQ(limiter->limit(), 20) << "window " << w;
  }
  window(limiter->limit());
  EXPECT_GT(limiter->limit(), 20);
}

// Every baseline_interval the baseline is measured again: a backend that
// became slower (10 ms -> 20 ms) is learned, and the limit goes back up to
// what the workers can take.
TEST(GradientConcurrencyLimiterTest, RemeasuresTheBaselinePeriodically) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  o.baseline_interval = absl::Seconds(5);
  auto limiter = MustCreate(o, clock);
  Backend backend(clock, *limiter, 16, absl::Milliseconds(10));
  backend.Run(absl::Seconds(2), 8);
  EXPECT_TRUE(WithinABucket(limiter->baseline(), absl::Milliseconds(10)));
  backend.set_service(absl::Milliseconds(20));
  // The next measurement comes 3.75 s to 6.25 s after the first.
  backend.Run(absl::Milliseconds(1500), 8);
  // Before the next measurement, the slower calls look like queueing.
  EXPECT_LT(limiter->limit(), 16);
  EXPECT_TRUE(WithinABucket(limiter->baseline(), absl::Milliseconds(10)));
  backend.Run(absl::Seconds(4), 8);
  EXPECT_TRUE(WithinABucket(limiter->baseline(), absl::Milliseconds(20)));
  EXPECT_GE(limiter->limit(), 16);
}

// The intervals between measurements are drawn in [0.75, 1.25] x
// baseline_interval: they vary, their mean stays near the interval, and two
// limiters made at different instants (servers started apart) do not
// measure in step.
TEST(GradientConcurrencyLimiterTest, JittersTheIntervalBetweenMeasurements) {
  GradientConcurrencyLimiter::Options o;
  o.baseline_interval = absl::Seconds(1);
  // When each measurement started, from the clock's start, over 60 s.
  const auto starts = [&](absl::Time epoch) {
    SimulatedClock clock(epoch);
    auto limiter = MustCreate(o, clock);
    Backend backend(clock, *limiter, 16, absl::Milliseconds(10));
    std::vector<absl::Duration> at;
    bool was_measuring = true;
    for (int ms = 0; ms < 60'000; ms += 5) {
      backend.Run(absl::Milliseconds(5), 1);
      const bool measuring = limiter->measuring();
      if (measuring && !was_measuring) at.push_back(clock.Now() - epoch);
      was_measuring = measuring;
    }
    return at;
  };
  const std::vector<absl::Duration> a = starts(absl::UnixEpoch() + absl::Hours(24));
  ASSERT_GE(a.size(), 40u);
  absl::Duration shortest = absl::InfiniteDuration();
  absl::Duration longest;
  for (size_t i = 1; i < a.size(); ++i) {
    // Between two starts: the drawn interval, plus the measurement itself
    // and the window that sees the interval over (tens of ms).
    const absl::Duration gap = a[i] - a[i - 1];
    EXPECT_GE(gap, absl::Milliseconds(750)) << i;
    EXPECT_LE(gap, absl::Milliseconds(1400)) << i;
    shortest = std::min(shortest, gap);
    longest = std::max(longest, gap);
  }
  EXPECT_GE(longest - shortest, absl::Milliseconds(250));
  const absl::Duration mean = (a.back() - a.front()) / static_cast<double>(a.size() - 1);
  EXPECT_GT(mean, absl::Milliseconds(900));
  EXPECT_LT(mean, absl::Milliseconds(1200));

  const std::vector<absl::Duration> b = starts(absl::UnixEpoch() + absl::Hours(24) +
                                               absl::Nanoseconds(1));
  ASSERT_GE(b.size(), 10u);
  int in_step = 0;
  for (size_t i = 1; i < 10; ++i) {
    if (absl::AbsDuration(a[i] - b[i]) < absl::Milliseconds(20)) ++in_step;
  }
  EXPECT_LT(in_step, 3);
}

// Calls admitted before a measurement's pin are not part of it: their
// latency holds the queue of the old limit.
TEST(GradientConcurrencyLimiterTest, MeasurementIgnoresCallsAdmittedBeforeThePin) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  o.baseline_samples = 1;
  // The initial measurement's pin began at construction: a call that
  // reports a latency longer than the limiter's life was admitted before it.
  clock.AdvanceTime(absl::Milliseconds(1));
  auto fresh = MustCreate(o, clock);
  ASSERT_TRUE(fresh->TryAcquire());
  clock.AdvanceTime(absl::Milliseconds(1));
  fresh->Release(Outcome::kSuccess, absl::Milliseconds(50));
  EXPECT_TRUE(fresh->measuring());
  // One admitted under the pin is the baseline.
  ASSERT_TRUE(fresh->TryAcquire());
  clock.AdvanceTime(absl::Milliseconds(1));
  fresh->Release(Outcome::kSuccess, absl::Milliseconds(1));
  EXPECT_FALSE(fresh->measuring());
  EXPECT_TRUE(WithinABucket(fresh->baseline(), absl::Milliseconds(1)));
}

// Threads admitting and releasing at once never hold more slots than the
// highest limit allowed, and end with none; the windows close meanwhile.
TEST(GradientConcurrencyLimiterTest, ThreadsNeverExceedTheMaxLimit) {
  SimulatedClock clock;
  GradientConcurrencyLimiter::Options o;
  o.max_limit = 6;
  o.initial_limit = 6;
  o.sample_window = absl::Milliseconds(1);
  o.min_samples = 1;
  o.baseline_samples = 4;
  auto limiter = MustCreate(o, clock);
  std::atomic<int> holders{0};
  std::atomic<int> max_holders{0};
  std::atomic<bool> stop{false};
  std::thread ticker([&] {
    while (!stop.load()) {
      clock.AdvanceTime(absl::Microseconds(100));
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!limiter->TryAcquire()) continue;
        const int now = holders.fetch_add(1) + 1;
        int seen = max_holders.load();
        while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
        }
        holders.fetch_sub(1);
        limiter->Release(Outcome::kSuccess, absl::Microseconds(1 + i % 500));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  stop.store(true);
  ticker.join();
  EXPECT_LE(max_holders.load(), 6);
  EXPECT_EQ(limiter->in_flight(), 0);
  EXPECT_GE(limiter->limit(), o.min_limit);
  EXPECT_LE(limiter->limit(), o.max_limit);
}

TEST(GradientConcurrencyLimiterTest, ValidateNamesTheFieldAndTheValue) {
  struct Case {
    void (*edit)(GradientConcurrencyLimiter::Options&);
    const char* message;
  };
  const Case cases[] = {
      {[](auto& o) { o.min_limit = 0; }, "min_limit: must be in [1, 1000000], got 0"},
      {[](auto& o) { o.max_limit = 2; }, "max_limit: must be in [min_limit (3), 1000000], got 2"},
      {[](auto& o) { o.initial_limit = 2000; },
       "initial_limit: must be in [min_limit (3), max_limit (1000)], got 2000"},
      {[](auto& o) { o.sample_window = absl::ZeroDuration(); },
       "sample_window: must be in [1ms, 1h], got 0"},
      {[](auto& o) { o.min_samples = 0; }, "min_samples: must be in [1, 1000000], got 0"},
      {[](auto& o) { o.tolerance = -1; }, "tolerance: must be in [0, 10], got -1"},
      {[](auto& o) { o.smoothing = 0; }, "smoothing: must be in (0, 1], got 0"},
      {[](auto& o) { o.baseline_interval = absl::Milliseconds(20); },
       "baseline_interval: must be in [sample_window (50ms), 1h], got 20ms"},
      {[](auto& o) { o.baseline_samples = 0; },
       "baseline_samples: must be in [1, 1000000], got 0"},
  };
  for (const Case& c : cases) {
    GradientConcurrencyLimiter::Options o;
    c.edit(o);
    const absl::Status s = GradientConcurrencyLimiter::Validate(o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
  EXPECT_TRUE(GradientConcurrencyLimiter::Validate({}).ok());
  GradientConcurrencyLimiter::Options nan;
  nan.tolerance = std::nan("");
  EXPECT_FALSE(GradientConcurrencyLimiter::Validate(nan).ok());
}

}  // namespace
}  // namespace resilience
