// ThreeStateBreaker under threads: exact counts while Closed, and a
// consistent state machine while threads race through trips and probes.

#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "src/breaker/three_state_breaker.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using State = BreakerState;

// Several threads hammering one breaker: while it stays Closed, every outcome
// is counted exactly.
TEST(ThreeStateBreakerConcurrencyTest, CountsAddUpExactly) {
  SimulatedClock clock;
  ThreeStateBreaker::Options o;
  o.min_requests = int64_t{1} << 40;  // never enough volume to trip
  auto breaker = *ThreeStateBreaker::Create(o, clock);
  constexpr int kThreads = 4;
  constexpr int kCalls = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        Admission a = breaker->Allow();
        ASSERT_TRUE(a.admitted());
        a.Record(t == 0 ? Outcome::kFailure : Outcome::kSuccess, absl::Milliseconds(1));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  RollingWindow::Counts c = breaker->Snapshot().counts;
  EXPECT_EQ(c.failure, kCalls);
  EXPECT_EQ(c.success, 3 * kCalls);
}

// Threads racing through trips, probes and recoveries while time moves: the
// state machine stays consistent (no crash, no race, no stuck half-open).
TEST(ThreeStateBreakerConcurrencyTest, RacingTransitionsStayConsistent) {
  SimulatedClock clock;
  ThreeStateBreaker::Options o;
  o.min_requests = 5;
  o.open_duration = absl::Milliseconds(50);
  o.max_open_duration = absl::Milliseconds(200);
  o.probe_interval = absl::ZeroDuration();
  o.half_open_max_probes = 2;
  std::atomic<int> transitions{0};
  o.listener = [&](const BreakerTransition&) { transitions.fetch_add(1); };
  auto breaker = *ThreeStateBreaker::Create(o, clock);
  // Every call moves the shared clock by 10 us: 60000 calls span 0.6 s, in
  // which the backend is down in every odd 100 ms period.
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        Admission a = breaker->Allow();
        clock.AdvanceTime(absl::Microseconds(10));
        if (!a.admitted()) continue;
        const bool down = (absl::ToUnixMillis(clock.Now()) / 100) % 2 == 1;
        a.Record(down || (i + t) % 7 == 0 ? Outcome::kFailure : Outcome::kSuccess,
                 absl::Microseconds(10));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(transitions.load(), 0);
  // After a long healthy stretch the breaker is closed again.
  clock.AdvanceTime(absl::Seconds(1));
  for (int i = 0; i < 10 && breaker->state() != State::kClosed; ++i) {
    Admission a = breaker->Allow();
    if (a.admitted()) a.Record(Outcome::kSuccess, absl::Microseconds(10));
  }
  EXPECT_EQ(breaker->state(), State::kClosed);
}

}  // namespace
}  // namespace resilience
