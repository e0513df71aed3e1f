#include "src/breaker/sre_breaker.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"
#include "tests/core/fake_random.h"

namespace resilience {
namespace {

using ::resilience::testing::FakeRandom;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// "Never drop": a draw of 1.0 is not below any probability <= 1.
constexpr double kNeverDrop = 1.0;
// "Always drop while p > 0".
constexpr double kAlwaysDrop = 0.0;

class SreBreakerTest : public ::testing::Test {
 protected:
  SreBreakerTest() : random_(std::make_shared<FakeRandom>(kNeverDrop)) {
    options_.random = random_;
    options_.recovery_acceleration = false;  // tests that want it turn it on
    options_.refresh_interval = absl::ZeroDuration();  // exact p_drop per call
  }

  std::unique_ptr<SreBreaker> Make() {
    options_.listener = [this](const BreakerTransition& t) { transitions_.push_back(t.to); };
    auto breaker = SreBreaker::Create(options_, clock_);
    EXPECT_TRUE(breaker.ok()) << breaker.status();
    return *std::move(breaker);
  }

  // Admits and records `n` calls with `outcome`. With the fake random source
  // nothing is dropped while filling; with a seeded one, dropped attempts are
  // retried (they count only when count_local_rejections is on).
  void Fill(SreBreaker& breaker, int n, Outcome outcome) {
    const double saved = random_->NextUniform();
    random_->Set(kNeverDrop);
    for (int i = 0; i < n; ++i) {
      Admission a = breaker.Allow();
      for (int tries = 0; !a.admitted() && tries < 1000; ++tries) a = breaker.Allow();
      ASSERT_TRUE(a.admitted());
      a.Record(outcome, absl::Milliseconds(1));
    }
    random_->Set(saved);
  }

  static double Formula(double requests, double accepts, double k, double protection) {
    return std::max(0.0, (requests - protection - k * accepts) / (requests + 1));
  }

  SimulatedClock clock_;
  std::shared_ptr<FakeRandom> random_;
  SreBreaker::Options options_;
  std::vector<BreakerState> transitions_;
};

// The drop probability is the SRE formula over hand-computed windows.
TEST_F(SreBreakerTest, DropProbabilityMatchesTheFormula) {
  auto breaker = Make();
  EXPECT_EQ(breaker->DropProbability(), 0.0);
  Fill(*breaker, 10, Outcome::kSuccess);
  Fill(*breaker, 30, Outcome::kFailure);
  // requests 40, accepts 10: (40 - 5 - 15) / 41
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), 20.0 / 41.0);
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), Formula(40, 10, 1.5, 5));
  Fill(*breaker, 20, Outcome::kSuccess);
  // requests 60, accepts 30: 60 - 5 - 45 = 10 -> 10 / 61
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), 10.0 / 61.0);
  Fill(*breaker, 10, Outcome::kSuccess);
  // requests 70, accepts 40: 70 - 5 - 60 = 5 -> 5 / 71
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), 5.0 / 71.0);
  Fill(*breaker, 9, Outcome::kSuccess);  // 79 - 5 - 73.5 = 0.5 -> 0.5 / 80
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), 0.5 / 80.0);
  Fill(*breaker, 1, Outcome::kSuccess);  // 80 - 5 - 75 = 0
  EXPECT_EQ(breaker->DropProbability(), 0.0);
}

// With K = 2 and no protection, the book's formula exactly.
TEST_F(SreBreakerTest, BookSettings) {
  options_.k = 2;
  options_.protection = 0;
  auto breaker = Make();
  Fill(*breaker, 1, Outcome::kSuccess);
  Fill(*breaker, 9, Outcome::kFailure);
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), (10.0 - 2.0) / 11.0);
}

// Protection: a few failures on a fresh breaker drop nothing.
TEST_F(SreBreakerTest, ProtectionCushionsEarlyFailures) {
  auto breaker = Make();
  Fill(*breaker, 5, Outcome::kFailure);
  EXPECT_EQ(breaker->DropProbability(), 0.0);
  Fill(*breaker, 1, Outcome::kFailure);
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), 1.0 / 7.0);
}

// Neutral outcomes are not counted.
TEST_F(SreBreakerTest, NeutralOutcomesAreNotCounted) {
  auto breaker = Make();
  Fill(*breaker, 50, Outcome::kNeutral);
  EXPECT_EQ(breaker->Snapshot().counts, RollingWindow::Counts());
}

// Over many seeded draws the observed drop rate matches p_drop within 0.01
// (the standard error at 100000 draws is about 0.0016).
TEST_F(SreBreakerTest, EmpiricalDropRateMatchesProbability) {
  options_.random = nullptr;
  options_.seed = 42;
  options_.count_local_rejections = false;  // keep p constant while drawing
  options_.force_pass_interval = absl::ZeroDuration();
  auto breaker = Make();
  Fill(*breaker, 10, Outcome::kSuccess);
  Fill(*breaker, 30, Outcome::kFailure);
  const double p = breaker->DropProbability();
  ASSERT_DOUBLE_EQ(p, 20.0 / 41.0);
  constexpr int kDraws = 100000;
  int dropped = 0;
  for (int i = 0; i < kDraws; ++i) {
    if (!breaker->Allow().admitted()) ++dropped;  // admitted ones end neutral
  }
  EXPECT_NEAR(static_cast<double>(dropped) / kDraws, p, 0.01);
  EXPECT_EQ(breaker->DropProbability(), p);  // nothing was counted meanwhile
}

// Failures leave the window with time, and dropping stops.
TEST_F(SreBreakerTest, WindowExpiry) {
  auto breaker = Make();
  Fill(*breaker, 100, Outcome::kFailure);
  EXPECT_GT(breaker->DropProbability(), 0.9);
  clock_.AdvanceTime(absl::Seconds(5));
  EXPECT_GT(breaker->DropProbability(), 0.9);  // still inside the 10 s window
  clock_.AdvanceTime(absl::Seconds(5));
  EXPECT_EQ(breaker->DropProbability(), 0.0);
  EXPECT_EQ(breaker->Snapshot().counts, RollingWindow::Counts());
}

// Dropped calls are rejected with kDropped and counted as local rejections.
TEST_F(SreBreakerTest, DropsAreRejectedAndCounted) {
  auto breaker = Make();
  Fill(*breaker, 100, Outcome::kFailure);
  random_->Set(kAlwaysDrop);
  Admission a = breaker->Allow();
  EXPECT_FALSE(a.admitted());
  EXPECT_EQ(a.reason(), RejectReason::kDropped);
  EXPECT_EQ(breaker->Snapshot().counts.rejected, 1);
}

// With count_local_rejections, drops raise p_drop (requests grow); without,
// p_drop stays where the backend's answers put it.
TEST_F(SreBreakerTest, CountLocalRejectionsBothWays) {
  for (bool count : {true, false}) {
    SCOPED_TRACE(count);
    options_.count_local_rejections = count;
    options_.force_pass_interval = absl::ZeroDuration();
    auto breaker = Make();
    Fill(*breaker, 10, Outcome::kSuccess);
    Fill(*breaker, 20, Outcome::kFailure);
    const double before = breaker->DropProbability();
    EXPECT_DOUBLE_EQ(before, Formula(30, 10, 1.5, 5));
    random_->Set(kAlwaysDrop);
    for (int i = 0; i < 30; ++i) EXPECT_FALSE(breaker->Allow().admitted());
    if (count) {
      EXPECT_DOUBLE_EQ(breaker->DropProbability(), Formula(60, 10, 1.5, 5));
    } else {
      EXPECT_DOUBLE_EQ(breaker->DropProbability(), before);
    }
    EXPECT_EQ(breaker->Snapshot().counts.rejected, 30);
    random_->Set(kNeverDrop);
  }
}

// After force_pass_interval without an admission, one call goes through even
// though p_drop says drop; the next is dropped again.
TEST_F(SreBreakerTest, ForcedPass) {
  options_.force_pass_interval = absl::Seconds(1);
  auto breaker = Make();
  Fill(*breaker, 200, Outcome::kFailure);
  random_->Set(kAlwaysDrop);
  EXPECT_FALSE(breaker->Allow().admitted());
  clock_.AdvanceTime(absl::Milliseconds(999));
  EXPECT_FALSE(breaker->Allow().admitted());
  clock_.AdvanceTime(absl::Milliseconds(1));
  Admission forced = breaker->Allow();
  EXPECT_TRUE(forced.admitted());
  EXPECT_FALSE(breaker->Allow().admitted());
  clock_.AdvanceTime(absl::Seconds(1));
  EXPECT_TRUE(breaker->Allow().admitted());
}

// Recovery acceleration scales p_drop by 1 - healthy/buckets, where healthy
// is the trailing run of complete buckets with successes and no failures.
TEST_F(SreBreakerTest, RecoveryAcceleration) {
  options_.recovery_acceleration = true;
  options_.count_local_rejections = false;
  auto breaker = Make();
  Fill(*breaker, 200, Outcome::kFailure);  // one bucket full of failures
  const double raw = Formula(200, 0, 1.5, 5);
  clock_.AdvanceTime(absl::Milliseconds(250));
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), raw);  // last complete bucket failed
  // Four 250 ms buckets with one success each.
  for (int i = 0; i < 4; ++i) {
    Fill(*breaker, 1, Outcome::kSuccess);
    clock_.AdvanceTime(absl::Milliseconds(250));
  }
  const double p4 = Formula(204, 4, 1.5, 5) * (1.0 - 4.0 / 40.0);
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), p4);
  // The same breaker without acceleration would drop more.
  EXPECT_LT(p4, Formula(204, 4, 1.5, 5));
}

// With a refresh interval, Allow() uses the p_drop of its last refresh until
// the interval has passed.
TEST_F(SreBreakerTest, RefreshIntervalCachesTheDropProbability) {
  options_.refresh_interval = absl::Milliseconds(1);
  auto breaker = Make();
  random_->Set(kAlwaysDrop);
  EXPECT_TRUE(breaker->Allow().admitted());  // p = 0 computed and cached
  Fill(*breaker, 100, Outcome::kFailure);
  random_->Set(kAlwaysDrop);
  EXPECT_GT(breaker->DropProbability(), 0.9);  // always exact
  EXPECT_TRUE(breaker->Allow().admitted());    // still the cached 0
  clock_.AdvanceTime(absl::Milliseconds(1));
  EXPECT_FALSE(breaker->Allow().admitted());   // refreshed
}

// max_drop_probability caps p_drop.
TEST_F(SreBreakerTest, MaxDropProbabilityCaps) {
  options_.max_drop_probability = 0.8;
  auto breaker = Make();
  Fill(*breaker, 1000, Outcome::kFailure);
  EXPECT_DOUBLE_EQ(breaker->DropProbability(), 0.8);
}

// A success slower than slow_call_threshold counts as a failure.
TEST_F(SreBreakerTest, SlowCallsCountAsFailures) {
  options_.slow_call_threshold = absl::Milliseconds(100);
  auto breaker = Make();
  Admission fast = breaker->Allow();
  fast.Record(Outcome::kSuccess, absl::Milliseconds(100));
  Admission slow = breaker->Allow();
  slow.Record(Outcome::kSuccess, absl::Milliseconds(101));
  RollingWindow::Counts c = breaker->Snapshot().counts;
  EXPECT_EQ(c.success, 1);
  EXPECT_EQ(c.failure, 1);
  EXPECT_EQ(c.slow, 1);
}

// The listener hears p_drop cross 0 once each way, and Snapshot reports it.
TEST_F(SreBreakerTest, ListenerHearsCrossingsOfZero) {
  auto breaker = Make();
  Fill(*breaker, 5, Outcome::kFailure);
  (void)breaker->Allow();
  EXPECT_TRUE(transitions_.empty());  // 5 failures: within the protection
  Fill(*breaker, 45, Outcome::kFailure);
  (void)breaker->Allow();
  (void)breaker->Allow();
  EXPECT_THAT(transitions_, ElementsAre(BreakerState::kOpen));  // only once
  EXPECT_EQ(breaker->Snapshot().state, BreakerState::kOpen);
  EXPECT_GT(breaker->Snapshot().drop_probability, 0.0);
  clock_.AdvanceTime(absl::Seconds(11));
  (void)breaker->Allow();
  EXPECT_THAT(transitions_, ElementsAre(BreakerState::kOpen, BreakerState::kClosed));
  EXPECT_EQ(breaker->Snapshot().state, BreakerState::kClosed);
}

// Each invalid option is refused with the field and the value named.
TEST(SreBreakerValidateTest, RefusesInvalidOptions) {
  SimulatedClock clock;
  auto expect_error = [&](SreBreaker::Options o, const std::string& text) {
    auto b = SreBreaker::Create(o, clock);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(b.status().message(), HasSubstr(text));
  };
  SreBreaker::Options o;
  o.k = -1;
  expect_error(o, "sre.k: must be >= 1, got -1");
  o = {};
  o.k = 0.5;
  expect_error(o, "sre.k");
  o = {};
  o.protection = -3;
  expect_error(o, "sre.protection: must be >= 0, got -3");
  o = {};
  o.buckets = 0;
  expect_error(o, "sre.buckets");
  o = {};
  o.window = absl::Seconds(1);
  o.buckets = 7;
  expect_error(o, "sre.window");
  o = {};
  o.max_drop_probability = 0;
  expect_error(o, "sre.max_drop_probability: must be in (0, 1], got 0");
  o.max_drop_probability = 1.5;
  expect_error(o, "sre.max_drop_probability");
  o = {};
  o.force_pass_interval = absl::Seconds(-1);
  expect_error(o, "sre.force_pass_interval");
  o = {};
  o.refresh_interval = absl::Seconds(10);
  expect_error(o, "sre.refresh_interval: must be >= 0 and < window (10s), got 10s");
  o = {};
  o.slow_call_threshold = absl::Seconds(-1);
  expect_error(o, "sre.slow_call_threshold");
  EXPECT_TRUE(SreBreaker::Create(SreBreaker::Options(), clock).ok());
}

// Documented defaults (docs/algorithms.md, §2 "SRE adaptive throttling").
TEST(SreBreakerDefaultsTest, Defaults) {
  SreBreaker::Options o;
  EXPECT_EQ(o.k, 1.5);
  EXPECT_EQ(o.protection, 5);
  EXPECT_EQ(o.window, absl::Seconds(10));
  EXPECT_EQ(o.buckets, 40);
  EXPECT_FALSE(o.count_local_rejections);
  EXPECT_EQ(o.force_pass_interval, absl::Seconds(1));
  EXPECT_TRUE(o.recovery_acceleration);
  EXPECT_EQ(o.max_drop_probability, 1.0);
}

// Several threads hammering Allow/Record: every call is accounted for exactly
// (the clock stands still, so nothing expires).
TEST(SreBreakerConcurrencyTest, CountsAddUpExactly) {
  SimulatedClock clock;
  SreBreaker::Options o;
  o.seed = 7;
  auto breaker = *SreBreaker::Create(o, clock);
  constexpr int kThreads = 4;
  constexpr int kCalls = 20000;
  std::atomic<int64_t> successes{0}, failures{0}, rejected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        Admission a = breaker->Allow();
        if (!a.admitted()) {
          rejected.fetch_add(1);
          continue;
        }
        // Thread 0 sees a broken backend, the others a healthy one.
        if (t == 0 && i % 2 == 0) {
          a.Record(Outcome::kFailure, absl::Milliseconds(1));
          failures.fetch_add(1);
        } else {
          a.Record(Outcome::kSuccess, absl::Milliseconds(1));
          successes.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  RollingWindow::Counts c = breaker->Snapshot().counts;
  EXPECT_EQ(c.success, successes.load());
  EXPECT_EQ(c.failure, failures.load());
  EXPECT_EQ(c.rejected, rejected.load());
  EXPECT_EQ(c.success + c.failure + c.rejected, kThreads * kCalls);
}

}  // namespace
}  // namespace resilience
